"""What the user wants from a query: a list of results (search) or an answer (answer).

``find``, ``search for``, ``list``, ``show`` ask for a list; questions (``what``, ``why``,
``how``, ``when``..., or a trailing ``?``) ask for an answer. Questions about change over
time ("how did X evolve", "X evolution", "evolution of X", "history of X", "X over time",
"timeline of Y") are answered in date order; the words that only say so are taken out of
what is searched. "X history" alone is not one: "chat history" names a thing.
"""

from __future__ import annotations

import re

MODES = ("search", "answer", "auto")

_SEARCH_START = re.compile(
    r"^\s*(find|search|look\s+up|look\s+for|list|show|get|grep|locate|fetch|retrieve|"
    r"pull\s+up|open)\b",
    re.IGNORECASE,
)
_QUESTION_START = re.compile(
    r"^\s*(what|what's|whats|why|how|when|where|who|whom|whose|which|did|does|do|is|are|was|"
    r"were|can|could|should|would|will|has|have|had|explain|describe|summari[sz]e|compare|"
    r"tell\s+me)\b",
    re.IGNORECASE,
)
_TIMELINE = re.compile(
    r"\b(how\s+(did|has|have)\b.*\b(evolve[ds]?|changed?|develop(ed)?|progress(ed)?|grow(n)?)|"
    r"timeline|history\s+of|over\s+time|evolution|evolutions|in\s+(date|chronological)\s+order|"
    r"chronolog(y|ical(ly)?))\b",
    re.IGNORECASE,
)
# Words that frame a timeline question without saying what it is about.
_TIMELINE_WORDS = re.compile(
    r"\b(evolved?|evolves|evolution|changed?|changes|timeline|history|over\s+time|"
    r"chronolog(y|ical(ly)?)|in\s+(date|chronological)\s+order|develop(ed)?|progress(ed)?)\b",
    re.IGNORECASE,
)


def detect(text: str) -> str:
    "``search`` or ``answer``, from the wording of a query."
    if is_timeline(text):  # "timeline of X" asks for a story, not a list
        return "answer"
    if _SEARCH_START.match(text):
        return "search"
    if text.rstrip().endswith("?") or _QUESTION_START.match(text):
        return "answer"
    return "search"


def resolve(mode: str, text: str) -> str:
    "The mode to run: ``auto`` becomes what :func:`detect` says."
    if mode not in MODES:
        from memdex.errors import InvalidParameter

        raise InvalidParameter(f"mode must be one of {', '.join(MODES)}, not {mode!r}.")
    return detect(text) if mode == "auto" else mode


def is_timeline(text: str) -> bool:
    "Does the question ask how something changed over time?"
    return bool(_TIMELINE.search(text))


def subject(text: str) -> str:
    "The part of a timeline question worth searching for: the framing words taken out."
    if not is_timeline(text):
        return text
    stripped = " ".join(_TIMELINE_WORDS.sub(" ", text).split())
    return stripped if re.search(r"\w", stripped) else text
