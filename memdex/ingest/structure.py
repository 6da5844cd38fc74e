"""The structure of a markdown text: its headings and its fenced code, by CommonMark.

One reading, by markdown-it-py, for everything that cuts or weighs markdown by its shape:
chunking at headings and the title (``ingest.markdown``), keyword weights
(``serena.keywords``) and the prose an extractive answer quotes (``answer.extractive``).
Hand-written "toggle on any ``` or ~~~ line" scanners got fences wrong: a ```` ```text ````
fence holding a ``~~~`` line hid every heading after it (issue 13).

Lines are counted as ``lines_of`` counts them: 0-based, split at newline only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from markdown_it import MarkdownIt


@dataclass(frozen=True)
class Heading:
    level: int  # 1 for "#", ..., 6 for "######"
    text: str  # as written, without the #s around it; emphasis and code marks kept
    line: int  # 0-based


@dataclass(frozen=True)
class Structure:
    """Headings of the document itself, in order, and where its fenced code is.

    Only ATX headings (``## Text``) outside block quotes and lists are headings here, and
    only those with text: the same ones the hand-written scanner took, except that CommonMark
    also allows up to three spaces before the ``#``. Setext headings (a line underlined with
    ``===`` or ``---``) are left out on purpose: in notes a paragraph followed by a ``---``
    rule would become a heading, and chunks would move.
    """

    headings: tuple[Heading, ...]
    fences: tuple[range, ...]  # line ranges, the fence lines included; an unclosed one runs to the end
    fenced: frozenset[int]  # every line inside those ranges


def lines_of(text: str) -> list[str]:
    """Lines as editors and ``grep -n`` count them: split on newline only (a form feed or
    U+2028 inside a line does not start a new one); a CRLF's CR is dropped."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


@cache
def _parser() -> MarkdownIt:
    "One parser per process, made when the first text is read (importing it takes ~50 ms)."
    from markdown_it import MarkdownIt

    # Block structure only: a heading's text is its inline token's raw content, so inline
    # parsing (emphasis, links) would cost time for nothing. Setext headings are no headings
    # here, and lines that would be one, or a link reference definition, read as a paragraph
    # instead: no ATX heading or fence is found or lost either way.
    parser = MarkdownIt("commonmark").disable(["inline", "text_join", "lheading", "reference"])
    parser.parse("")  # compile the rule chains now, not in two threads at once
    return parser


def structure_of(text: str) -> Structure:
    "Headings and fenced code of a markdown text (a body without its frontmatter)."
    # markdown-it also ends a line at a lone CR; here only a newline does (see lines_of).
    source = text.replace("\r\n", "\n").replace("\r", " ")
    headings = _plain_headings(source)
    if headings is not None:
        return Structure(headings, (), frozenset())
    return parsed_structure(source)


def parsed_structure(source: str) -> Structure:
    "The structure as markdown-it reads it, of a text whose line ends are newlines only."
    tokens = _parser().parse(source)
    headings: list[Heading] = []
    fences: list[range] = []
    for i, token in enumerate(tokens):
        if token.map is None:
            continue
        if token.type == "fence":
            fences.append(range(*token.map))
        elif token.type == "heading_open" and token.level == 0:
            content = tokens[i + 1].content
            if content:
                headings.append(Heading(int(token.tag[1]), content, token.map[0]))
    fenced = frozenset(line for lines in fences for line in lines)
    return Structure(tuple(headings), tuple(fences), fenced)


# What can hide a heading or hold code: a fence (``` or ~~~) anywhere, a line opening an HTML
# block, a "#" line indented 1-3 spaces (inside a list item it is the item's, not the
# document's), and NUL, which markdown-it rewrites. A text with none of these -- most notes --
# is read without markdown-it (an eighth of the time of indexing them): its headings are exactly
# the lines that start with "#", read as markdown-it reads them (test_markdown_structure.py
# holds the two readings equal).
_NOT_PLAIN = re.compile(r"```|~~~|\x00|^ {0,3}<|^ {1,3}#", re.MULTILINE)
_ATX = re.compile(r"^(#{1,6})(?:[ \t]+(.*?))?[ \t]*$", re.MULTILINE)


def _plain_headings(source: str) -> tuple[Heading, ...] | None:
    "The headings of a text with no fences or HTML blocks; None for any other text."
    if _NOT_PLAIN.search(source):
        return None
    headings = []
    line, counted = 0, 0
    for match in _ATX.finditer(source):
        content = _closing_hashes(match.group(2) or "")
        if not content:
            continue
        if content[0].isspace() or content[-1].isspace():
            return None  # markdown-it's trim and str.strip differ on such ends: let it decide
        line += source.count("\n", counted, match.start())
        counted = match.start()
        headings.append(Heading(len(match.group(1)), content, line))
    return tuple(headings)


def _closing_hashes(text: str) -> str:
    "A heading's text without an optional closing run of #s (``## Title ##``)."
    stripped = text.rstrip("#")
    if stripped != text and (not stripped or stripped[-1] in " \t"):
        return stripped.rstrip(" \t")
    return text
