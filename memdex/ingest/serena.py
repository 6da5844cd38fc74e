"""serena: Serena-style tiered memory folders, flat or nested.

A folder with ``memory-index.md`` (routing: ``|keywords: [name](path.md) (tokens), ...`` lines,
or a ``| Task Keywords | Essential Memories |`` table), domain indexes ``*-index.md`` (a
``| Keywords | File |`` table whose cells hold ``[name](path.md)`` links or bare names) and
atomic memory files. Atomic files become documents keyed by their Serena name (the path
without ``.md``). Index files are structure: their rows are stored as links, and each row's
keywords become topics of the file it points at.
"""

from __future__ import annotations

import os
import re
from pathlib import Path, PurePosixPath

from ..models import IndexLink, ParsedFile
from .base import SourceFile, SourceKind
from .markdown import lines_of, read_markdown, strip_suffix

_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
_LINE_ROW = re.compile(r"^\|(?P<kw>[^|\[\]]+?):\s*(?P<rest>\[.*)$")
_SEPARATOR = re.compile(r"^\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$")
_CELL_SPLIT = re.compile(r"(?<!\\)\|")
_KEYWORD_SPLIT = re.compile(r"[\s,;]+")
_FILE_HEADERS = ("file", "memor", "path", "link", "target")


def is_index_name(rel_path: str) -> bool:
    name = PurePosixPath(rel_path).name.lower()
    return name == "memory-index.md" or name.endswith("-index.md")


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


def _column(header: list[str], names: tuple[str, ...]) -> int | None:
    for i, cell in enumerate(header):
        if any(n in cell.lower() for n in names):
            return i
    return None


def parse_index(text: str, index_path: Path, root: Path) -> list[IndexLink]:
    "Every keywords -> file row of an index, in its table form and its line form."
    lines = lines_of(text)
    links: list[IndexLink] = []
    header: list[str] | None = None
    kw_col: int | None = None
    file_col: int | None = None
    for i, line in enumerate(lines):
        number = i + 1
        stripped = line.strip()
        if not stripped.startswith("|"):
            header = None
            continue
        if _SEPARATOR.match(stripped):
            continue
        line_row = _LINE_ROW.match(stripped)
        if line_row and not stripped.rstrip().endswith("|"):
            links += _row_links(number, line_row.group("kw"), line_row.group("rest"), index_path, root)
            continue
        next_line = lines[i + 1].strip() if i + 1 < len(lines) else ""
        if header is None and _SEPARATOR.match(next_line):
            header = table_cells(stripped)
            kw_col = _column(header, ("keyword",))
            file_col = _column(header, _FILE_HEADERS)
            if len(header) == 2 and kw_col is None:
                # `| Constraint | Memory |`: the column that is not the file is the keywords.
                kw_col, file_col = (1 - file_col, file_col) if file_col is not None else (0, 1)
            continue
        if header is None or kw_col is None or file_col is None:
            continue
        cells = table_cells(stripped)
        if len(cells) != len(header):
            continue  # a malformed row; `memdex lint` reports it
        links += _row_links(number, cells[kw_col], cells[file_col], index_path, root)
    return links


def _row_links(number: int, keywords: str, files: str, index_path: Path, root: Path) -> list[IndexLink]:
    words = split_keywords(keywords)
    found = [(label, target, True) for label, target in _LINK.findall(files)]
    if not found:
        # Bare names count only when they name a file: "Application" in a prose table does not.
        found = [(name, name, name.lower().endswith(".md")) for name in split_keywords(files)]
    out = []
    for label, target, explicit in found:
        if "://" in target or target.startswith("#"):
            continue
        resolved = resolve_target(target.split("#", 1)[0], index_path, root)
        if resolved and (explicit or os.path.isfile(resolved)):
            out.append(IndexLink(line=number, keywords=words, target=resolved, label=label))
    return out


def resolve_target(target: str, index_path: Path, root: Path) -> str | None:
    "An index cell's target as an absolute path: next to the index, else from the root."
    target = target.strip().strip("`")
    if not target:
        return None
    if not target.lower().endswith((".md", ".markdown")):
        target += ".md"
    candidates = [index_path.parent / target, root / target]
    for candidate in candidates:
        if candidate.exists():
            return os.path.normpath(candidate)
    return os.path.normpath(candidates[0])


def has_prose(text: str) -> bool:
    """Does an index file carry text of its own besides its lookup rows?

    A pure index (rows, headings, ``[Section]`` lines) is structure only. One with a few
    lines of prose -- purpose, notes, tables of concepts -- is also a document, so what it
    says stays searchable.
    """
    prose = 0
    for line in lines_of(text):
        stripped = line.strip()
        if not stripped or stripped.startswith(("|", "#")) or re.fullmatch(r"\[[^\]]+\]", stripped):
            continue
        prose += 1
        if prose >= 3:
            return True
    return False


def has_index_table(path: Path) -> bool:
    "A quick look: does this file start like a Serena keyword index?"
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            head = f.read(4096)
    except OSError:
        return False
    return bool(re.search(r"^\|[^\n]*keywords?[^\n]*\|", head, re.IGNORECASE | re.MULTILINE)) or bool(
        re.search(r"^\|[^|\n]+:\s*\[[^\]]+\]\([^)]+\.md\)", head, re.MULTILINE)
    )


class SerenaKind(SourceKind):
    name = "serena"
    description = "Serena memory folders: memory-index.md, *-index.md keyword tables, atomic files"

    def claims_root(self, root: Path) -> bool:
        if not root.is_dir():
            return False
        if (root / "memory-index.md").is_file():
            return True
        indexes = sorted(root.glob("*-index.md"))[:5]
        return any(has_index_table(p) for p in indexes)

    def parse(self, source: SourceFile) -> ParsedFile:
        text = source.text()
        links: list[IndexLink] = []
        if is_index_name(source.rel_path):
            links = parse_index(text, source.path, source.root)
            if links and not has_prose(text):
                return ParsedFile(kind="serena-index", links=links)
        doc = read_markdown(source, self.name, key=strip_suffix(source.rel_path))
        if links:
            doc.type = doc.type or "index"
        return ParsedFile(kind=self.name, documents=[doc], links=links)
