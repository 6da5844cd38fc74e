"""What a file needs, decided from its stat, its row and its recorded problem (ingest/decide.py).

Previously every rule lived inside one 107-line method of the pipeline, its "unchanged"
bookkeeping written three times (issue 36); here each rule is one row."""

from __future__ import annotations

from pathlib import Path

import pytest

from memdex.ingest.decide import (
    Append,
    Broken,
    Decision,
    KnownBroken,
    Problem,
    Read,
    TooLarge,
    Unchanged,
    decide,
)
from memdex.ingest.walk import Found
from memdex.ingest.writer import StoredFile

MB = 1024 * 1024
FOUND = Found(Path("/r/a.md"), "a.md", size=100, mtime_ns=7)


def _stored(size: int = 100, mtime_ns: int = 7, kind: str = "note", deleted: str | None = None) -> StoredFile:
    return StoredFile(1, "/r/a.md", kind, size, mtime_ns, "sha", deleted)


@pytest.mark.parametrize(
    ("found", "stored", "broken", "stale", "decision"),
    [
        (Found(Path("/r/x"), "x", problem="cannot list folder: Permission denied"), None, None, False,
         Problem("cannot list folder: Permission denied")),
        (FOUND, None, None, False, Read()),  # new
        (FOUND, _stored(), None, False, Unchanged("note")),  # the same stat
        (FOUND, _stored(mtime_ns=6), None, False, Read()),  # touched: read, hashed, perhaps parsed
        (FOUND, _stored(kind="memory"), None, False, Read()),  # its kind may no longer read it
        (FOUND, _stored(), None, True, Read()),  # its root read by older parsers
        (FOUND, _stored(deleted="2026-01-01T00:00:00Z"), None, False, Read()),  # deleted, kept, back
        (FOUND, _stored(), Broken("bad YAML", 100, 7), False, KnownBroken("bad YAML")),  # broken so
        (FOUND, _stored(), Broken("bad YAML", 90, 7), False, Read()),  # broken, changed since
        (FOUND, _stored(), Broken("cannot read file", None, None), False, Read()),  # checked every run
        (Found(Path("/r/a.md"), "a.md", size=6 * MB, mtime_ns=8), None, None, False,
         TooLarge("file is 6.0 MB, over the 5 MB limit; raise it with --max-file-size")),
        (Found(Path("/r/a.md"), "a.md", size=150, mtime_ns=8), _stored(), None, False, Append()),  # grew
        (Found(Path("/r/a.md"), "a.md", size=150, mtime_ns=8), _stored(), None, True, Read()),
        (Found(Path("/r/a.md"), "a.md", size=50, mtime_ns=8), _stored(), None, False, Read()),  # shrank
    ],
)  # fmt: skip
def test_decide(
    found: Found, stored: StoredFile | None, broken: Broken | None, stale: bool, decision: Decision
) -> None:
    assert decide(found, stored, broken, {"note"}, 5 * MB, stale) == decision
