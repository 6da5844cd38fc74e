"""What the user wants from a query: a list of results (search) or an answer (answer).

``find``, ``search for``, ``list``, ``show`` ask for a list; questions (``what``, ``why``,
``how``, ``when``..., or a trailing ``?``) ask for an answer. Questions about change over
time ("how did X evolve", "X evolution", "evolution of X", "history of X", "X over time",
"timeline of Y") are answered in date order; the words that only say so are taken out of
what is searched. "X history" alone is not one: "chat history" names a thing.
"""

from __future__ import annotations

import re

from memdex.query.options import MODES

# Patterns, compiled by ``re`` (and kept in its cache) when first used: `memdex search` names
# its mode and never matches them, so it does not pay their 3 ms at start-up.
_SEARCH_START = (
    r"(?i)^\s*(find|search|look\s+up|look\s+for|list|show|get|grep|locate|fetch|retrieve|"
    r"pull\s+up|open)\b"
)
_QUESTION_START = (
    r"(?i)^\s*(what|what's|whats|why|how|when|where|who|whom|whose|which|did|does|do|is|are|was|"
    r"were|can|could|should|would|will|has|have|had|explain|describe|summari[sz]e|compare|"
    r"tell\s+me)\b"
)
_TIMELINE = (
    r"(?i)\b(how\s+(did|has|have)\b.*\b(evolve[ds]?|changed?|develop(ed)?|progress(ed)?|grow(n)?)|"
    r"timeline|history\s+of|over\s+time|evolution|evolutions|in\s+(date|chronological)\s+order|"
    r"chronolog(y|ical(ly)?))\b"
)
# Words that frame a timeline question without saying what it is about.
_TIMELINE_WORDS = (
    r"(?i)\b(evolved?|evolves|evolution|changed?|changes|timeline|history|over\s+time|"
    r"chronolog(y|ical(ly)?)|in\s+(date|chronological)\s+order|develop(ed)?|progress(ed)?)\b"
)


def detect(text: str) -> str:
    "``search`` or ``answer``, from the wording of a query."
    if is_timeline(text):  # "timeline of X" asks for a story, not a list
        return "answer"
    if re.match(_SEARCH_START, text):
        return "search"
    if text.rstrip().endswith("?") or re.match(_QUESTION_START, text):
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
    return bool(re.search(_TIMELINE, text))


def subject(text: str) -> str:
    "The part of a timeline question worth searching for: the framing words taken out."
    if not is_timeline(text):
        return text
    stripped = " ".join(re.sub(_TIMELINE_WORDS, " ", text).split())
    return stripped if re.search(r"\w", stripped) else text
