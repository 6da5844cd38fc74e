"""One ignore rule for `memdex index` and `memdex watch` (issue 13).

The walk applied the file globs (``*.tmp``) to folders too, the watcher and the pipeline did
not: a file under ``drafts.tmp/`` was skipped by `memdex index`, indexed by `memdex watch`,
and removed again by the next `memdex index`. Now both ask ``IgnoreList``.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memdex.ingest.pipeline import IndexReport, index_paths
from memdex.ingest.walk import IgnoreList
from memdex.store import db

from .test_service import running
from .test_watcher import wait_until


@pytest.mark.parametrize(
    ("extra", "rel_path", "is_dir", "ignored"),
    [
        ((), "drafts.tmp/a.md", False, False),  # a folder named like litter is somebody's folder
        ((), "drafts.tmp", True, False),
        ((), "a.md.tmp", False, True),  # the litter globs name files
        ((), "sub/.a.md.swp", False, True),
        ((), "notes~/a.md", False, False),
        ((), "notes~", False, True),
        ((), ".git/x.md", False, True),  # tools' state folders, with all under them
        ((), ".git", True, True),
        ((), ".git", False, True),  # a worktree's .git is a file
        ((), "a/node_modules/b/readme.md", False, True),
        ((), "notes/a.md", False, False),
        (("*.tmp",), "drafts.tmp/a.md", False, True),  # MEMDEX_IGNORE globs match folders too
        (("*.tmp",), "drafts.tmp", True, True),
        (("drafts",), "drafts/c.md", False, True),
        (("drafts",), "drafts", False, True),
    ],
)
def test_the_rule(extra: tuple[str, ...], rel_path: str, is_dir: bool, ignored: bool) -> None:
    assert IgnoreList(extra)(rel_path, is_dir=is_dir) is ignored


def test_the_rule_reads_memdex_ignore(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEX_IGNORE", " *.tmp , drafts ")
    assert IgnoreList().extra == ("*.tmp", "drafts")
    assert IgnoreList()("drafts.tmp/a.md") and IgnoreList()("drafts/a.md")


TREE = {
    "plain.md": "# Plain\n\nAbout herons.\n",
    "drafts.tmp/draft.md": "# Draft\n\nAbout godwits.\n",
    ".git/hidden.md": "# Hidden\n\nAbout godwits.\n",
    "node_modules/pkg/readme.md": "# Package\n\nAbout godwits.\n",
    "sub/half-written.md.tmp": "# Half\n\nAbout godwits.\n",
}


def write(root: Path, rel_paths: list[str]) -> None:
    for rel in rel_paths:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(TREE[rel])


def stored(db_path: Path) -> set[str]:
    conn = db.connect(db_path, create=False)
    try:
        return {r[0] for r in conn.execute("SELECT rel_path FROM files")}
    finally:
        conn.close()


@pytest.mark.parametrize(
    ("memdex_ignore", "expected"),
    [
        (None, {"plain.md", "drafts.tmp/draft.md"}),
        ("*.tmp", {"plain.md"}),
    ],
)
def test_index_and_watch_give_the_same_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, memdex_ignore: str | None, expected: set[str]
) -> None:
    if memdex_ignore is not None:
        monkeypatch.setenv("MEMDEX_IGNORE", memdex_ignore)
    # memdex index, over the whole tree at once.
    indexed = tmp_path / "indexed"
    write(indexed, list(TREE))
    index(tmp_path / "indexed.db", indexed)
    assert stored(tmp_path / "indexed.db") == expected

    # memdex watch: the same files appear while a real watcher runs.
    watched = tmp_path / "watched"
    write(watched, ["plain.md"])
    db_path = tmp_path / "watched.db"
    index(db_path, watched)
    with running(db_path):
        write(watched, [rel for rel in TREE if rel != "plain.md"])
        (watched / "last.md").write_text("# Last\n\nWritten after the others.\n")
        # Events come in order, and a batch is applied whole: once the last file is stored,
        # every earlier event has had its turn.
        wait_until(lambda: "last.md" in stored(db_path))
    assert stored(db_path) == expected | {"last.md"}

    # And the next memdex index agrees: nothing to add, nothing to remove.
    report = index(db_path, watched)
    assert (report.added, report.removed, report.unchanged) == (0, 0, len(expected) + 1)


def index(db_path: Path, root: Path) -> IndexReport:
    conn = db.connect(db_path)
    try:
        return index_paths(conn, [root])
    finally:
        conn.close()
