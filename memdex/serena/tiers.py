"""A Serena tiered memory folder as it stands on disk: its indexes, its memories, its links.

``memory-index.md`` routes to domain indexes (``*-index.md``), whose rows point at atomic
memory files. :func:`scan` reads a folder (nested or flat, with memdex's ignore rules) into a
:class:`Folder`: every index parsed line by line, every row's targets resolved, and the link
graph -- which files each row reaches, and which files no row reaches. ``memdex lint``,
``memdex keywords`` and ``memdex cost`` all work from it; none of them writes a file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from memdex.errors import InvalidParameter
from memdex.ingest.kinds.serena import is_index_name, resolve_target
from memdex.ingest.serena_index import IndexText, Row, read_index
from memdex.ingest.walk import walk
from memdex.models import est_tokens

TOP_INDEX = "memory-index.md"
NOT_MEMORIES = ("readme.md", "changelog.md", "license.md", "contributing.md")


@dataclass
class Link:
    index: str  # rel path of the index file
    line: int
    keywords: list[str]
    label: str
    written: str  # the target as written in the row
    target: str | None  # rel path of the file it resolves to inside the folder, or None
    explicit: bool  # a [name](path.md) link, not a bare name
    exists: bool


@dataclass
class Index:
    rel: str
    text: str
    parsed: IndexText
    links: list[Link] = field(default_factory=list)

    @property
    def is_top(self) -> bool:
        return self.rel == TOP_INDEX

    def rows(self) -> list[Row]:
        return self.parsed.rows


@dataclass
class Folder:
    root: Path
    indexes: dict[str, Index] = field(default_factory=dict)
    memories: dict[str, int] = field(default_factory=dict)  # rel path -> size in bytes
    others: dict[str, int] = field(default_factory=dict)  # README and the like: not memories

    def size(self, rel: str) -> int:
        return self.memories.get(rel) or self.others.get(rel) or _size(self.root / rel)

    def tokens(self, rel: str) -> int:
        return est_tokens(self.size(rel))

    def links_to(self, rel: str) -> list[Link]:
        return [link for i in self.indexes.values() for link in i.links if link.target == rel]

    def referenced(self) -> set[str]:
        "Every file some index row points at."
        return {link.target for i in self.indexes.values() for link in i.links if link.target}

    def orphans(self) -> list[str]:
        "Memories no index row points at, by the link graph (nested folders included)."
        pointed = self.referenced()
        return sorted(rel for rel in self.memories if rel not in pointed)

    def reachable(self) -> set[str]:
        "Files reached from memory-index.md through index rows, recursively."
        seen: set[str] = set()
        stack = [TOP_INDEX] if TOP_INDEX in self.indexes else []
        while stack:
            rel = stack.pop()
            if rel in seen:
                continue
            seen.add(rel)
            index = self.indexes.get(rel)
            if index is not None:
                stack.extend(link.target for link in index.links if link.target and link.exists)
        return seen

    def text(self, rel: str) -> str:
        try:
            return (self.root / rel).read_text("utf-8", errors="replace")
        except OSError:
            return ""

    def domain_of(self, rel: str) -> Index | None:
        "The domain index that points at a memory (the first, if several do)."
        for link in self.links_to(rel):
            index = self.indexes[link.index]
            if not index.is_top:
                return index
        return None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def scan(root: Path) -> Folder:
    "Read a Serena folder: its index files parsed, its memory files listed, links resolved."
    root = Path(os.path.abspath(root))
    if not root.is_dir():
        raise InvalidParameter(f"{root} is not a folder: give the folder that holds memory-index.md.")
    folder = Folder(root)
    for found in walk(root):
        if found.problem or not found.rel_path.lower().endswith((".md", ".markdown")):
            continue
        if is_index_name(found.rel_path):
            text = folder.text(found.rel_path)
            folder.indexes[found.rel_path] = Index(found.rel_path, text, read_index(text))
        elif os.path.basename(found.rel_path).lower() in NOT_MEMORIES:
            folder.others[found.rel_path] = found.size
        else:
            folder.memories[found.rel_path] = found.size
    known = set(folder.indexes) | set(folder.memories) | set(folder.others)
    for index in folder.indexes.values():
        for row in index.rows():
            for label, written, explicit in row.targets:
                if "://" in written or written.startswith("#"):
                    continue
                resolved = resolve_target(written.split("#", 1)[0], root / index.rel, root)
                rel = os.path.relpath(resolved, root).replace(os.sep, "/") if resolved else None
                if rel is not None and (rel.startswith("../") or rel == ".."):
                    rel = None  # points outside the folder
                exists = rel is not None and (rel in known or os.path.isfile(root / rel))
                link = Link(index.rel, row.line, row.keywords, label, written, rel, explicit, exists)
                index.links.append(link)
    return folder
