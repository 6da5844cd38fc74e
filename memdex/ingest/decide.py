"""What a file needs, decided from what is known before it is read: its stat now, its ``files``
row, and the problem recorded for it. A pure function, so every rule of change detection is
in one place and tested on its own (``tests/ingest/test_decide.py``); ``pipeline`` carries
out what it decides.

- ``Problem``: the walk could not look at it (a folder it cannot list, a file it cannot stat);
- ``Unchanged``: same size and mtime as stored, read by a kind that may read it, no problem
  recorded, its root read by this memdex's parsers: nothing to do but count it;
- ``KnownBroken``: it failed before with this very stat: said again, not read again;
- ``TooLarge``: past the size limit (of ``--max-file-size``, else of its kinds);
- ``Append``: a session log that only grew: read on from where it stopped (or whole, when
  that cannot be done);
- ``Read``: read it, and parse it if its bytes changed.
"""

from __future__ import annotations

from dataclasses import dataclass

from memdex.ingest.base import MB
from memdex.ingest.walk import Found
from memdex.ingest.writer import StoredFile


@dataclass(frozen=True)
class Broken:
    "The problem recorded for a file, and its stat then (None: checked again every run)."

    reason: str
    size: int | None
    mtime_ns: int | None


@dataclass(frozen=True)
class Problem:
    reason: str


@dataclass(frozen=True)
class Unchanged:
    kind: str


@dataclass(frozen=True)
class KnownBroken:
    reason: str


@dataclass(frozen=True)
class TooLarge:
    reason: str


@dataclass(frozen=True)
class Append:
    pass


@dataclass(frozen=True)
class Read:
    pass


Decision = Problem | Unchanged | KnownBroken | TooLarge | Append | Read


def same_stat(found: Found, stored: StoredFile | None) -> bool:
    "Is the file as the index last read it, by its stat (and not a file deleted and kept, back)?"
    return (
        stored is not None
        and not stored.deleted_at
        and (stored.size, stored.mtime_ns)
        == (
            found.size,
            found.mtime_ns,
        )
    )


def decide(
    found: Found, stored: StoredFile | None, broken: Broken | None, kinds: set[str], limit: int, stale: bool
) -> Decision:
    """What ``found`` needs (see the module). ``kinds``: the kinds that may read it; ``limit``:
    its size limit in bytes; ``stale``: its root was read by older parsers (read it again)."""
    if found.problem:
        return Problem(found.problem)
    fresh = broken is None and not stale
    if same_stat(found, stored) and stored is not None and stored.kind in kinds and fresh:
        return Unchanged(stored.kind)
    if broken is not None and (broken.size, broken.mtime_ns) == (found.size, found.mtime_ns):
        return KnownBroken(broken.reason)
    if found.size > limit:
        size = f"{found.size / MB:.1f} MB, over the {limit / MB:g} MB limit"
        return TooLarge(f"file is {size}; raise it with --max-file-size")
    if stored is not None and found.size > stored.size and fresh:
        return Append()
    return Read()
