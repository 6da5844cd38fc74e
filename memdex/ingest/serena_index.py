"""Serena index files read line by line: keyword rows, and what else the file holds.

Two row forms: a table row (``| keyword keyword | [name](path.md) |`` under a header with a
keywords column and a file column) and a line row (``|keywords: [name](path.md) (tokens), ...``,
the top index's line form). Every other line is classified -- title, heading, metadata,
navigation, section, prose -- and every table that cannot be read says why, so ``memdex
lint`` can report it and indexing never reads a malformed index as silently empty.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from memdex.ingest.structure import structure_of

_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
_LINE_ROW = re.compile(r"^\|(?P<kw>[^|\[\]]+?):\s*(?P<rest>\S.*)$")
_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_KEYWORD_SPLIT = re.compile(r"[\s,;]+")
_FILE_HEADERS = ("file", "memor", "path", "link", "target")
_METADATA = re.compile(r"^(\*\*[^*]+\*\*\s*:|[A-Z][A-Za-z ]{1,24}:\s+\S)")
_NAVIGATION = re.compile(
    r"^((parent|back|up|see also|related|index|home|next|previous)\s*:"  # Parent: ...
    r"|>\s*\["  # > [breadcrumb]
    r"|[-*]?\s*(\[[^\]]+\]\([^)]+\)[\s,|·]*)+$)",  # a line of links only
    re.IGNORECASE,
)


@dataclass
class Row:
    line: int
    keywords: list[str]
    targets: list[tuple[str, str, bool]]  # (label, target as written, an explicit [link](path))
    form: str  # table | line
    outside_table: bool = False  # after a blank line, with no header of its own


@dataclass
class Problem:
    line: int
    code: str  # malformed-table | malformed-row | escaped-pipe | row-outside-table
    message: str


@dataclass
class IndexText:
    rows: list[Row] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    other: list[tuple[int, str, str]] = field(default_factory=list)  # (line, class, text)


def table_cells(line: str) -> list[str]:
    "Cells of a markdown table row; an escaped ``\\|`` stays inside its cell."
    stripped = line.strip()
    if stripped.startswith("|"):
        stripped = stripped[1:]
    if stripped.endswith("|") and not stripped.endswith("\\|"):
        stripped = stripped[:-1]
    return [c.strip() for c in _CELL_SPLIT.split(stripped)]


def split_keywords(text: str) -> list[str]:
    words = [w.strip("`*_\"'()") for w in _KEYWORD_SPLIT.split(text)]
    out: list[str] = []
    for w in words:
        if w and w not in out:
            out.append(w)
    return out


def targets_of(cell: str, bare_names: bool) -> list[tuple[str, str, bool]]:
    "The files a cell points at: its ``[name](path.md)`` links, else (if asked) bare names."
    links = [(label, target, True) for label, target in _LINK.findall(cell)]
    if links or not bare_names:
        return links
    return [(name, name, False) for name in split_keywords(cell) if re.search(r"[\w]", name)]


def classify(line: str) -> str:
    "What a line outside the tables is: blank, title, heading, section, metadata, navigation, prose."
    s = line.strip()
    if not s:
        return "blank"
    if re.match(r"^#\s", s):
        return "title"
    if re.match(r"^#{2,6}\s", s):
        return "heading"
    if re.fullmatch(r"\[[^\]]+\]", s):
        return "section"
    if _NAVIGATION.match(s):
        return "navigation"
    if _METADATA.match(s):
        return "metadata"
    return "prose"


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    for i, cell in enumerate(header):
        if any(n in cell.lower() for n in names):
            return i
    return None


def read_index(text: str) -> IndexText:
    "Every row of an index, every line that is not one, and every table that cannot be read."
    out = IndexText()
    lines = text.splitlines()
    header: list[str] | None = None  # the table being read
    last: list[str] | None = None  # the last readable table's header, for rows after a blank line
    columns: tuple[int, int] | None = None
    fenced = structure_of(text).fenced  # code fences by CommonMark, as the parsers read them
    for i, line in enumerate(lines):
        number = i + 1
        stripped = line.strip()
        in_code = i in fenced
        if in_code or not stripped.startswith("|"):
            header = None
            kind = "prose" if in_code else classify(line)
            if kind != "blank":
                out.other.append((number, kind, stripped))
            continue
        if _SEPARATOR.match(stripped):
            continue
        line_row = _LINE_ROW.match(stripped)
        if line_row and not stripped.endswith("|"):
            targets = targets_of(line_row.group("rest"), bare_names=False)
            if targets:
                out.rows.append(Row(number, split_keywords(line_row.group("kw")), targets, "line"))
            else:
                message = "a routing line with no [name](path.md) link to follow"
                out.problems.append(Problem(number, "malformed-row", message))
            continue
        next_line = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if header is None and _SEPARATOR.match(next_line):
            header = table_cells(stripped)
            columns = _columns(header)
            if columns is None:
                named = ", ".join(c or "(empty)" for c in header)
                out.problems.append(
                    Problem(
                        number,
                        "malformed-table",
                        f"a {len(header)}-column table ({named}) with no keywords column and file column: "
                        "none of its rows can be read as index rows",
                    )
                )
            else:
                last = header
            continue
        cells = table_cells(stripped)
        outside = header is None
        table = header if header is not None else last
        if header is not None and columns is None:
            continue  # a table already reported as unreadable
        if table is None or (outside and len(cells) != len(table)):
            out.problems.append(Problem(number, "malformed-row", "a table row with no table header above it"))
            continue
        if "\\|" in stripped:
            message = "an escaped pipe (\\|) inside a cell: other tools split the row there"
            out.problems.append(Problem(number, "escaped-pipe", message))
        if len(cells) != len(table):
            message = f"{len(cells)} cells where the table header has {len(table)}"
            out.problems.append(Problem(number, "malformed-row", message))
            continue
        kw_col, file_col = _columns(table) or (0, 1)
        if outside:
            message = "a blank line above ends the table: the row is read as part of it, but shown as text"
            out.problems.append(Problem(number, "row-outside-table", message))
        named_file_column = _column(table, _FILE_HEADERS) is not None
        targets = targets_of(cells[file_col], bare_names=named_file_column)
        out.rows.append(Row(number, split_keywords(cells[kw_col]), targets, "table", outside_table=outside))
    return out


def _columns(header: list[str]) -> tuple[int, int] | None:
    "(keywords column, file column) of a table header, or None when it has no such pair."
    kw_col = _column(header, ("keyword",))
    file_col = _column(header, _FILE_HEADERS)
    if kw_col is not None and file_col is not None and kw_col != file_col:
        return kw_col, file_col
    if len(header) == 2:
        # `| Constraint | Memory |`: the column that is not the file is the keywords.
        if file_col is not None:
            return 1 - file_col, file_col
        if kw_col is not None:
            return kw_col, 1 - kw_col
        return 0, 1
    return None
