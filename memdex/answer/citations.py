"""Citations in answer text: ``[2]``, ``[1, 3]``, ``[1-3]``, ``[Source 4]``, ``[^5]``, ``[1; 2]``.

A model may write a citation in any of these forms; each is read as the source numbers it
names, checked against the sources that were sent, and written back in one form (``[1, 3]``).
A bracket right after a word or a backtick (``items[0]``) is code, not a citation.
"""

from __future__ import annotations

import re

_ONE = r"(?:(?:sources?|src|ref)\s*|\^|#)?\d{1,4}"
_CONTENT = rf"\s*{_ONE}(?:\s*(?:[-–—]|,|;|and|&)\s*{_ONE})*\s*"
CITATION = re.compile(rf"(?<![\w`])\[({_CONTENT})\]", re.IGNORECASE)
MAX_RANGE = 50  # a range wider than this is not a citation anyone means


def numbers(content: str) -> list[int]:
    "The source numbers one citation names, ranges expanded."
    out: list[int] = []
    for part in re.split(r"\s*(?:,|;|and|&)\s*", content.strip(), flags=re.IGNORECASE):
        bounds = [int(n) for n in re.findall(r"\d+", part)]
        if len(bounds) == 2 and 0 <= bounds[1] - bounds[0] <= MAX_RANGE:
            out.extend(range(bounds[0], bounds[1] + 1))
        else:
            out.extend(bounds)
    return out


def cited(text: str) -> list[int]:
    "Every source number cited in ``text``, in order, repeats kept."
    return [n for m in CITATION.finditer(text) for n in numbers(m.group(1))]


def keep_only(text: str, allowed: set[int]) -> tuple[str, list[int]]:
    """``text`` with each citation rewritten to the allowed numbers it names (``[1, 3]``), or
    taken out with the space before it when it names none; and the numbers dropped."""
    dropped: list[int] = []
    pieces: list[str] = []
    cursor = 0
    for m in CITATION.finditer(text):
        named = numbers(m.group(1))
        dropped += [n for n in named if n not in allowed]
        known = sorted({n for n in named if n in allowed})
        start = m.start()
        if not known:
            while start > cursor and text[start - 1] in " \t":
                start -= 1
        pieces.append(text[cursor:start])
        if known:
            pieces.append(f"[{', '.join(map(str, known))}]")
        cursor = m.end()
    pieces.append(text[cursor:])
    return "".join(pieces), dropped


_DIGIT_BRACKET = re.compile(r"(?<![\w`])\[([^\[\]\n]*\d[^\[\]\n]*)\]")


def neutralize(text: str, keep_citations: bool = False) -> str:
    """Brackets holding a number become parentheses, so that in an answer ``[2026-05-30]`` or
    ``[#2510]`` quoted from a memory does not read as a citation. With ``keep_citations``,
    brackets in a citation form stay (text whose citations were already checked)."""

    def swap(m: re.Match[str]) -> str:
        if keep_citations and CITATION.fullmatch(m.group(0)):
            return m.group(0)
        return f"({m.group(1)})"

    while True:  # nested brackets ("[[notes-2026-01]]") take one pass a level
        changed = _DIGIT_BRACKET.sub(swap, text)
        if changed == text:
            return text
        text = changed
