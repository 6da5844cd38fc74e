"""text: plain text files -- ``*.txt``, ``*.text``, reStructuredText ``*.rst``, Org ``*.org``.

One document per file, read as written: no markup is interpreted except what names the
document and its sections.

- **Sections**: a title line underlined (and perhaps overlined) with one punctuation
  character, as reStructuredText and many plain-text notes write them (``Title`` over
  ``=====``; levels in the order their styles first appear); in Org files also ``* Heading``
  lines (levels by their stars; trailing ``:tags:`` left out).
- **Title**: Org's ``#+TITLE:``, else the first section title (in Org, the first top-level
  heading), else the file name.
- **Chunks**: paragraphs (blank-line separated), packed up to the chunk bound, cut again at
  section titles; each keeps its line range in the file, as markdown's chunks do.
- **Date**: a ``date:`` line near the top (``#+DATE:``, ``:date:`` or ``Date:``), else a date
  in the file name -- as notes are dated.

A binary or non-UTF-8 file is an ``IngestError``: reported and skipped, as markdown is.
"""

from __future__ import annotations

import re
from pathlib import PurePosixPath

from memdex.ingest.base import SourceFile, SourceKind
from memdex.ingest.markdown import DEFAULT_CHUNK_TOKENS, as_list, chunk_markdown, dated, folder_namespace
from memdex.ingest.structure import Heading, Structure, lines_of
from memdex.models import Document, ParsedFile

SUFFIXES = (".txt", ".text", ".rst", ".org")

# reStructuredText allows any of these as a section adornment.
_ADORNMENT = re.compile(r"""^([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])\1{2,}\s*$""")
_ORG_HEADING = re.compile(r"^(\*+)[ \t]+(.*?)(?:[ \t]+(:[\w@#%:]+:))?[ \t]*$")
_ORG_KEYWORD = re.compile(r"^#\+(\w+):[ \t]*(.*?)[ \t]*$")
# A date field near the top: Org's #+DATE:, rST's :date: field, a plain "Date:" line.
_FIELD_DATE = re.compile(
    r"^\s*(?:#\+|:)?(?:date|created|updated|modified)\s*:\s*[<\[]?(\d{4}-\d{2}-\d{2})", re.IGNORECASE
)


class PlainKind(SourceKind):
    name = "text"
    description = "plain text (*.txt, *.text, *.rst, *.org): paragraphs as chunks, titled by its title line"
    suffixes = SUFFIXES

    def claims(self, rel_path: str) -> bool:
        return self.accepts(rel_path)

    def parse(self, source: SourceFile) -> ParsedFile:
        doc = parse_plain(
            source.text(),
            source.rel_path,
            kind=self.name,
            size_bytes=source.size,
            max_tokens=source.chunk_tokens or DEFAULT_CHUNK_TOKENS,
        )
        doc.scope = source.scope
        return ParsedFile(kind=self.name, documents=[doc])


def parse_plain(
    text: str, rel_path: str, *, kind: str, size_bytes: int, max_tokens: int = DEFAULT_CHUNK_TOKENS
) -> Document:
    "Title, tags (Org's ``#+FILETAGS``), date and chunks of one plain text file, keyed by its path."
    org = rel_path.lower().endswith(".org")
    lines = lines_of(text)
    keywords = org_keywords(lines) if org else {}
    shape = structure(text, org=org)
    first = next((h.text for h in shape.headings if h.level == 1), None)
    title = keywords.get("title") or first or PurePosixPath(rel_path).stem
    tags = as_list(keywords.get("filetags", "").replace(":", ","))
    date, date_source = _field_date(lines) or dated(None, text, rel_path)
    return Document(
        key=rel_path,
        kind=kind,
        title=title,
        chunks=chunk_markdown(text, 1, title, max_tokens, shape),
        size_bytes=size_bytes,
        tags=tags,
        topics=[(t, "tag") for t in tags],
        namespace=folder_namespace(rel_path),
        date=date,
        date_source=date_source,
        line_count=len(lines),
    )


def _field_date(lines: list[str]) -> tuple[str, str] | None:
    for line in lines[:40]:
        match = _FIELD_DATE.match(line)
        if match:
            return match.group(1), "text"
    return None


def org_keywords(lines: list[str]) -> dict[str, str]:
    "Org's in-buffer keywords before the first heading (``#+TITLE: x`` -> ``{'title': 'x'}``)."
    found: dict[str, str] = {}
    for line in lines:
        if _ORG_HEADING.match(line):
            break
        match = _ORG_KEYWORD.match(line)
        if match and match.group(2):
            found.setdefault(match.group(1).lower(), match.group(2))
    return found


def structure(text: str, *, org: bool) -> Structure:
    """The section titles of a plain text, as ``chunk_markdown`` takes a markdown text's
    headings: underlined (or over- and underlined) title lines, and Org's ``*`` headings."""
    lines = lines_of(text)
    headings: list[Heading] = []
    styles: list[tuple[str, bool]] = []  # adornment styles in order of appearance: their levels
    i = 0
    while i < len(lines):
        line = lines[i]
        if org and (match := _ORG_HEADING.match(line)) and match.group(2):
            headings.append(Heading(len(match.group(1)), match.group(2), i))
            i += 1
            continue
        found = _underlined(lines, i)
        if found is None:
            i += 1
            continue
        start, title, style, after = found
        if style not in styles:
            styles.append(style)
        headings.append(Heading(styles.index(style) + 1, title, start))
        i = after
    return Structure(tuple(headings), (), frozenset())


def _underlined(lines: list[str], i: int) -> tuple[int, str, tuple[str, bool], int] | None:
    """A section title starting at line ``i``: (its first line, its text, its style, the line
    after it), or None. A title is one line after a blank line (or the start), underlined
    with one character repeated at least 3 times and about as long as the title."""
    if i > 0 and lines[i - 1].strip():
        return None
    over = _ADORNMENT.match(lines[i])
    at = i + 1 if over else i
    if at + 1 >= len(lines):
        return None
    title = lines[at].strip()
    if not title or _ADORNMENT.match(lines[at]) or (not over and lines[at][:1].isspace()):
        return None
    under = _ADORNMENT.match(lines[at + 1])
    if under is None or len(lines[at + 1].strip()) < len(title) // 2:
        return None
    char = under.group(1)
    if over and over.group(1) != char:
        return None
    return i, title, (char, bool(over)), at + 2
