"""Roots and the zones inside them: which kind reads which folder, and each root's settings."""

from __future__ import annotations

import os
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from memdex.ingest import detect_root_kind


def detect_scope(root: Path) -> str:
    "project when the root is inside a git work tree, else user."
    folder = root if root.is_dir() else root.parent
    for candidate in [folder, *folder.parents]:
        if (candidate / ".git").exists():
            return "project"
    return "user"


class Zones:
    """Which kind claims each folder: the outermost folder that claims a kind wins.

    A Serena memory folder inside a repository indexed as a whole (``repo/.serena/memories``)
    is read as Serena, keyed from that folder, while the rest of the repository stays notes.
    Looked up without recursion, so a tree thousands of folders deep is no problem.
    """

    def __init__(self, root: Path, root_kind: str | None, detect: bool) -> None:
        self.root = root
        self.cache: dict[Path, tuple[Path, str | None]] = {root: (root, root_kind)}
        self.detect = detect

    def of(self, folder: Path) -> tuple[Path, str | None]:
        if folder in self.cache:
            return self.cache[folder]
        if not self.detect or not folder.is_relative_to(self.root):
            return self.cache[self.root]
        missing: list[Path] = []
        current = folder
        while current not in self.cache:
            missing.append(current)
            current = current.parent
        zone = self.cache[current]
        for step in reversed(missing):  # from the outermost unknown folder inwards
            if zone[1] is None:
                kind = detect_root_kind(step)
                if kind:
                    zone = (step, kind)
            self.cache[step] = zone
        return zone


@dataclass
class Root:
    "A root being indexed, with the settings it was registered with."

    id: int
    path: Path
    forced: str | None  # --kind
    scope: str
    zones: Zones
    nested: set[str]  # other roots inside this one, which index themselves
    chunk_tokens: int | None = None
    stale: bool = False  # last read by older parsers: unchanged files are read again

    @cached_property
    def is_dir(self) -> bool:
        "Whether the root is a folder; looked up once per run, not once per file."
        return self.path.is_dir()


def nested_roots(root: str, all_roots: list[str]) -> set[str]:
    return {p for p in all_roots if p.startswith(root + os.sep)}


def owning_root(path: str, roots: list[dict[str, object]]) -> dict[str, object] | None:
    "The deepest indexed root that contains ``path`` (or is it)."
    owners = [r for r in roots if path == r["path"] or path.startswith(str(r["path"]) + os.sep)]
    return max(owners, key=lambda r: len(str(r["path"])), default=None)
