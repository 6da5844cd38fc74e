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

from memdex.ingest.base import SourceFile, SourceKind
from memdex.ingest.markdown import lines_of, read_markdown, strip_suffix
from memdex.ingest.serena_index import read_index
from memdex.models import IndexLink, ParsedFile


def is_index_name(rel_path: str) -> bool:
    name = PurePosixPath(rel_path).name.lower()
    return name == "memory-index.md" or name.endswith("-index.md")


def parse_index(text: str, index_path: Path, root: Path) -> list[IndexLink]:
    "Every keywords -> file row of an index, in its table form and its line form."
    links: list[IndexLink] = []
    for row in read_index(text).rows:
        for label, target, explicit in row.targets:
            if "://" in target or target.startswith("#"):
                continue
            resolved = resolve_target(target.split("#", 1)[0], index_path, root)
            # Bare names count only when they name a file: "Application" in a prose table does not.
            if resolved and (explicit or os.path.isfile(resolved)):
                links.append(IndexLink(line=row.line, keywords=row.keywords, target=resolved, label=label))
    return links


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
