"""Roots and the zones inside them: which kind reads which folder, and each root's settings.

A root is registered by its real path (symlinks resolved), and a path given later is
compared resolved too, so one folder reached through two paths is one root, indexed once.
Roots registered before memdex resolved them keep their path; a path that resolves to the
same folder finds them. ``forget_root`` drops a root and everything indexed from it.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

from memdex.errors import InvalidParameter, MemdexError
from memdex.ingest import detect_root_kind, get_kind, kinds_for
from memdex.ingest.base import SourceKind
from memdex.ingest.walk import Found, folder_stat
from memdex.store import db


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
    keep_deleted: bool | None = None  # keep deleted files' documents; None: as their kind says
    keep_secrets: bool = False  # index secrets as typed (--keep-secrets); else masked (memdex.secrets)

    @cached_property
    def is_dir(self) -> bool:
        "Whether the root is a folder; looked up once per run, not once per file."
        return self.path.is_dir()

    def candidates(self, found: Found) -> tuple[Path, list[SourceKind], Found] | None:
        """Which kinds may read this file, in which zone. In an aggregate zone (an archive) only
        the manifest counts, and its stat becomes the whole folder's."""
        if self.is_dir:
            zone, zone_kind = self.zones.of(found.path.parent)
        else:
            zone, zone_kind = self.path.parent, None
        kind = get_kind(zone_kind) if zone_kind else None
        if kind is not None and kind.aggregate and not self.forced:
            if found.path != kind.manifest(zone) or found.problem:
                return None
            size, mtime_ns = folder_stat(zone)
            return zone, [kind], replace(found, size=size, mtime_ns=mtime_ns)
        if zone == self.path:
            rel = found.rel_path
        else:
            rel = os.path.relpath(found.path, zone).replace(os.sep, "/")
        kinds = kinds_for(rel, self.forced, zone_kind)
        companions = {suffix for k in kinds for suffix in k.companions}
        if companions and not found.problem:  # a database with its -wal: both say it changed
            found = with_companions(found, companions)
        return (zone, kinds, found) if kinds else None


def with_companions(found: Found, suffixes: set[str]) -> Found:
    "A file's stat with its companions' (a SQLite -wal): their sizes summed, the newest mtime."
    size, mtime_ns = found.size, found.mtime_ns
    for suffix in sorted(suffixes):
        try:
            st = os.stat(f"{found.path}{suffix}")
        except OSError:
            continue  # none now (checkpointed and removed, or never made)
        if not st.st_size:
            continue  # empty: no change in it (a reader of the database may have made it)
        size, mtime_ns = size + st.st_size, max(mtime_ns, st.st_mtime_ns)
    return replace(found, size=size, mtime_ns=mtime_ns)


def nested_roots(root: str, all_roots: list[str]) -> set[str]:
    return {p for p in all_roots if p.startswith(root + os.sep)}


def owning_root(path: str, roots: list[dict[str, object]]) -> dict[str, object] | None:
    "The deepest indexed root that contains ``path`` (or is it)."
    owners = [r for r in roots if path == r["path"] or path.startswith(str(r["path"]) + os.sep)]
    return max(owners, key=lambda r: len(str(r["path"])), default=None)


def resolve_root(given: Path, registered: list[str]) -> tuple[Path, str | None]:
    """The root a path given by the user stands for, and a note when that is not the path
    itself: its real path, or a registered root that resolves to the same place."""
    real = Path(os.path.realpath(given))
    target = real
    if str(real) not in registered:
        same = [p for p in registered if os.path.exists(p) and os.path.realpath(p) == str(real)]
        target = Path(same[0]) if same else real
    if target == given:
        return target, None
    if str(target) in registered:
        return target, f"{given} is {target} through a symlink, and that is indexed already: nothing twice"
    return target, f"{given} is {target} through a symlink: indexed as {target}"


def roots_to_index(
    conn: sqlite3.Connection, given: list[Path], kind: str | None
) -> tuple[list[Path], list[str]]:
    """The roots absolute paths given by the user stand for, each once, with notes for the
    user; checked before anything is written: resolved (a symlink to an indexed folder is
    that folder), and a file no kind reads is an error, not a new root."""
    registered = [r["path"] for r in conn.execute(db.query("root_paths"))]
    roots: list[Path] = []
    notes: list[str] = []
    for path in given:
        if not os.path.exists(path):
            why = " (a symlink whose target does not exist)" if os.path.islink(path) else ""
            raise MemdexError(f"{path}: no such file or folder{why}.")
        root, note = resolve_root(path, registered)
        if root in roots:
            notes.append(f"{path} is {root}, given already: indexed once")
            continue
        if note:
            notes.append(note)
        if not root.is_dir() and str(root) not in registered and not kinds_for(root.name, kind, None):
            raise InvalidParameter(_unread_file(root, kind))
        roots.append(root)
    return roots, notes


def _unread_file(path: Path, kind: str | None) -> str:
    if kind:
        reads = ", ".join(get_kind(kind).suffixes)
        return f"{path}: --kind {kind} reads {reads} files, not this one; nothing was indexed."
    return (
        f"{path}: no source kind reads {path.suffix or 'this'} files, so nothing was indexed. "
        "`memdex kinds` lists the kinds (notes, memories, chat exports, ...) and the files they "
        "read; give a folder to index what it holds."
    )


def find_root(conn: sqlite3.Connection, path: str | os.PathLike[str]) -> sqlite3.Row | None:
    "The registered root a path names: as given, resolved, or resolving to the same folder."
    given, real = os.path.abspath(path), os.path.realpath(path)
    rows = conn.execute(db.query("root_paths")).fetchall()
    exact = [r for r in rows if r["path"] in (given, real)]
    if exact:
        return exact[0]
    return next((r for r in rows if os.path.exists(r["path"]) and os.path.realpath(r["path"]) == real), None)


def describe_root(conn: sqlite3.Connection, path: str | os.PathLike[str]) -> dict[str, Any]:
    """What forgetting a root would remove: its path, and counts of its files, documents,
    chunks, vectors and recorded problems. Raises MemdexError when ``path`` is no root."""
    row = find_root(conn, path)
    if row is None:
        raise MemdexError(f"{os.path.abspath(path)} is not a root of this index; `memdex roots` lists them.")
    counts = conn.execute(db.query("root_contents"), {"root_id": row["id"]}).fetchone()
    others = [{"path": r["path"]} for r in conn.execute(db.query("root_paths")) if r["id"] != row["id"]]
    outer = owning_root(row["path"], others)
    return {"id": row["id"], "path": row["path"], **dict(counts), "outer_root": outer and outer["path"]}


def forget_root(conn: sqlite3.Connection, path: str | os.PathLike[str]) -> dict[str, Any]:
    """Drop a root and all that was indexed from it: files, documents, chunks, full-text
    entries, vectors, topics and recorded problems; index rows it held stop giving topics to
    other roots' documents. One transaction. Returns what was removed (``describe_root``).

    A root inside another (``outer_root``) leaves its files to that one, which indexes them
    again on its next run. The caller holds the writer lock (``watch.handoff``).
    """
    from memdex.ingest.writer import Writer

    removed = describe_root(conn, path)
    writer = Writer(conn)
    try:
        writer.forget_root(int(removed["id"]))
        writer.commit()
    except BaseException:
        writer.rollback()
        raise
    return removed
