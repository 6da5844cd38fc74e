"""Finding source files under a root: what is skipped, symlinks, unreadable folders.

``IgnoreList`` is the one ignore rule: the walk here, the watcher's events and the pipeline's
changed paths all ask it, so a file `memdex index` skips is one `memdex watch` ignores too.
Extend it with ``MEMDEX_IGNORE`` (comma-separated glob patterns, matched against each path
component, folders included).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

# Folders that are tools' state, never anybody's memories.
IGNORED_DIRS = (
    ".git",
    ".hg",
    ".svn",
    ".jj",
    "node_modules",
    "__pycache__",
    ".venv",
    "venv",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
    ".tox",
    ".trash",
    ".Trash",
    ".obsidian",
)
# Editor swap and backup files, partial downloads, OS litter.
IGNORED_FILES = (
    ".*.swp",
    ".*.swo",
    ".*.swx",
    "*~",
    ".#*",
    "#*#",
    "*.tmp",
    "*.temp",
    "*.part",
    "*.crdownload",
    ".DS_Store",
    "Thumbs.db",
    "4913",
    ".~lock.*",
)


def extra_ignores() -> tuple[str, ...]:
    raw = os.environ.get("MEMDEX_IGNORE", "")
    return tuple(p.strip() for p in raw.split(",") if p.strip())


def _pattern(globs: tuple[str, ...]) -> Callable[[str], object]:
    "One regex for many globs: a walk tests each name once, not once per glob."
    return re.compile("|".join(fnmatch.translate(g) for g in globs)).match


class IgnoreList:
    """Is a path ignored? The one answer for `memdex index` and `memdex watch`.

    - A folder named like a tool's state (``IGNORED_DIRS``: ``.git``, ``node_modules``...) is
      ignored with everything under it; so is a file of that name (a worktree's ``.git``).
    - The litter globs (``IGNORED_FILES``: ``*.tmp``, ``.*.swp``, ``*~``...) name files. A
      folder that matches one (``drafts.tmp/``) is somebody's folder, not litter: it and the
      files in it are read.
    - Each ``MEMDEX_IGNORE`` glob matches any component, folder or file:
      ``MEMDEX_IGNORE='*.tmp'`` ignores ``drafts.tmp/`` and all in it.

    Paths are relative to their root; the root's own name is never tested.
    """

    def __init__(self, extra: tuple[str, ...] | None = None) -> None:
        self.extra = extra_ignores() if extra is None else extra
        self._folder = _pattern(IGNORED_DIRS + self.extra)
        self._file = _pattern(IGNORED_DIRS + IGNORED_FILES + self.extra)

    def name(self, name: str, is_dir: bool) -> bool:
        "Is an entry of this name ignored (its folder being one that is not)?"
        return (self._folder if is_dir else self._file)(name) is not None

    def __call__(self, rel_path: str, is_dir: bool = False) -> bool:
        "Is this path ignored? ``is_dir``: it names a folder, not a file."
        *folders, name = rel_path.replace(os.sep, "/").split("/")
        return any(self._folder(part) for part in folders) or self.name(name, is_dir)


@dataclass
class Found:
    "A file under a root, with its stat, or the reason it cannot be used."

    path: Path
    rel_path: str
    size: int = 0
    mtime_ns: int = 0
    problem: str | None = None


def walk(
    root: Path,
    skip_dirs: set[str] | None = None,
    start: Path | None = None,
    ignored: IgnoreList | None = None,
) -> Iterator[Found]:
    """Every file under ``start`` (default: ``root``, or ``root`` itself if it is a file) that
    ``ignored`` (default: ``IgnoreList()``) lets through, sorted, with paths relative to ``root``.

    A symlinked file inside the root is passed over (its target is indexed where it is; one
    result, not two); one pointing outside is reported; symlinked folders are not descended
    (a loop cannot trap the walk). ``skip_dirs`` holds absolute paths of nested
    roots -- folders or single files -- indexed on their own.
    """
    ignored = ignored or IgnoreList()
    root = Path(os.path.abspath(root))
    if not root.is_dir():
        found = stat_file(root, root.name, root.parent)
        if found is not None:
            yield found
        return
    skip = skip_dirs or set()
    first = Path(os.path.abspath(start)) if start else root
    first_rel = os.path.relpath(first, root).replace(os.sep, "/")
    if first_rel != "." and ignored(first_rel, is_dir=True):
        return
    # Each folder with the prefix its entries' relative paths start with.
    stack = [(first, "" if first_rel == "." else first_rel + "/")]
    while stack:
        folder, prefix = stack.pop()
        try:
            with os.scandir(folder) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            yield Found(folder, prefix.rstrip("/") or ".", problem=f"cannot list folder: {exc.strerror}")
            continue
        subdirs = []
        for entry in entries:
            try:
                is_dir = entry.is_dir(follow_symlinks=False)
            except OSError:
                is_dir = False
            # A folder's ancestors were tested when it was entered: only the name is left.
            if ignored.name(entry.name, is_dir):
                continue
            rel = prefix + entry.name
            if is_dir:
                if entry.path not in skip:
                    subdirs.append((Path(entry.path), rel + "/"))
                continue
            link = entry.is_symlink()
            if link and _is_dir_link(entry.path):
                continue
            if entry.path in skip:
                continue  # a file indexed as a root of its own
            found = stat_file(Path(entry.path), rel, root, link)
            if found is not None:
                yield found
        stack.extend(reversed(subdirs))


def _is_dir_link(path: str) -> bool:
    try:
        return os.path.isdir(path)
    except OSError:
        return False


def stat_file(path: Path, rel: str, root: Path, is_link: bool | None = None) -> Found | None:
    """A file's stat, or why it cannot be used (loop, broken link, outside the root, not
    regular); None for a symlink to a file inside the root, which is indexed where it is.

    ``is_link``: whether ``path`` is a symlink, when the caller knows (a directory listing
    does); else one more system call finds out.
    """
    try:
        st = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return Found(path, rel, problem="symlink loop")
        if os.path.islink(path):
            return Found(path, rel, problem="broken symlink (its target does not exist)")
        return Found(path, rel, problem=f"cannot read file: {exc.strerror}")
    if is_link is None:
        is_link = os.path.islink(path)
    if is_link:
        target = os.path.realpath(path)
        real_root = os.path.realpath(root)
        if os.path.commonpath([target, real_root]) != real_root:
            return Found(path, rel, problem=f"symlink points outside the indexed folder ({target})")
        if path != root:
            return None  # the file it points at is indexed where it is
    if not stat.S_ISREG(st.st_mode):
        return Found(path, rel, problem="not a regular file")
    return Found(path, rel, size=st.st_size, mtime_ns=st.st_mtime_ns)


def folder_stat(folder: Path) -> tuple[int, int]:
    "(total size, newest mtime) of every non-ignored file under a folder: a stat per file."
    size, mtime = 0, 0
    for found in walk(folder):
        if not found.problem:
            size += found.size
            mtime = max(mtime, found.mtime_ns)
    return size, mtime
