"""index_paths(): change detection, replacement, deletion, bad input, and nothing lost."""

import hashlib
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db


def _titles(conn: sqlite3.Connection, query: str) -> list[str]:
    return [h.title for h in search(conn, query).hits]


def _tree_state(root: Path) -> dict[str, tuple[str, int]]:
    return {
        str(p): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns)
        for p in sorted(root.rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_source_files_are_never_written(conn: sqlite3.Connection, sample_copy: Path) -> None:
    before = _tree_state(sample_copy)
    index_paths(conn, [sample_copy])
    index_paths(conn, [sample_copy])
    assert _tree_state(sample_copy) == before


def test_unchanged_tree_costs_a_stat_per_file(conn: sqlite3.Connection, sample_copy: Path) -> None:
    first = index_paths(conn, [sample_copy / "notes"])
    assert first.added == 3
    # Change a file's bytes but restore its size and mtime: a re-run that only stats files
    # cannot see the change, which proves it did not read the file.
    note = sample_copy / "notes" / "chatgpt-prompting-tips.md"
    st = note.stat()
    text = note.read_text()
    note.write_text(text.replace("verbatim", "VERBATIM"))
    os.utime(note, ns=(st.st_atime_ns, st.st_mtime_ns))
    second = index_paths(conn, [sample_copy / "notes"])
    assert (second.unchanged, second.added, second.updated) == (3, 0, 0)
    stored = conn.execute("SELECT text FROM chunks WHERE text LIKE '%verbatim%'").fetchone()[0]
    assert "verbatim" in stored and "VERBATIM" not in stored


def test_touched_but_identical_file_is_not_reparsed(conn: sqlite3.Connection, sample_copy: Path) -> None:
    index_paths(conn, [sample_copy / "notes"])
    ids = conn.execute("SELECT id FROM chunks ORDER BY id").fetchall()
    note = sample_copy / "notes" / "chatgpt-prompting-tips.md"
    os.utime(note, ns=(1, 1_000_000_000))
    report = index_paths(conn, [sample_copy / "notes"])
    assert report.unchanged == 3 and report.updated == 0
    assert conn.execute("SELECT id FROM chunks ORDER BY id").fetchall() == ids
    assert (
        conn.execute("SELECT mtime_ns FROM files WHERE path = ?", (str(note),)).fetchone()[0] == 1_000_000_000
    )


def test_changed_file_is_replaced_and_keeps_its_id(conn: sqlite3.Connection, sample_copy: Path) -> None:
    index_paths(conn, [sample_copy / "notes"])
    note = sample_copy / "notes" / "chatgpt-prompting-tips.md"
    doc_id = conn.execute("SELECT id FROM documents WHERE key = 'chatgpt-prompting-tips.md'").fetchone()[0]
    note.write_text(note.read_text() + "\n## New section\n\nMention of zeppelins.\n")
    report = index_paths(conn, [sample_copy / "notes"])
    assert report.updated == 1 and report.unchanged == 2
    hits = search(conn, "zeppelins").hits
    assert [(h.id, h.title) for h in hits] == [(doc_id, "Prompting tips that worked with ChatGPT")]
    assert conn.execute("SELECT count(*) FROM chunks WHERE text LIKE '%verbatim%'").fetchone()[0] == 1


def test_deleted_file_disappears(conn: sqlite3.Connection, sample_copy: Path) -> None:
    index_paths(conn, [sample_copy / "notes"])
    (sample_copy / "notes" / "meeting-notes-2025-11-03.md").unlink()
    report = index_paths(conn, [sample_copy / "notes"])
    assert report.removed == 1
    assert _titles(conn, "nightly export job") == []
    assert (
        conn.execute(
            "SELECT count(*) FROM chunks c LEFT JOIN documents d ON d.id = c.document_id WHERE d.id IS NULL"
        ).fetchone()[0]
        == 0
    )


def _bad_folder(root: Path) -> None:
    root.mkdir()
    (root / "good.md").write_text("# Good note\n\nThe lighthouse keeper logs every ship.\n")
    # a memory (a note with a broken header is indexed as text: tests/ingest/test_note.py)
    (root / "broken-yaml.memory.md").write_text("---\ntitle: [unclosed\n---\n# Broken\n")
    (root / "empty.md").write_text("")
    (root / "binary.md").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)))
    (root / "latin1.md").write_bytes("# Caf\xe9 notes\n".encode("latin-1"))
    with open(root / "huge.md", "wb") as f:
        f.write(b"# Huge\n" + b"x" * (20 * 1024 * 1024))
    os.symlink("loop-b.md", root / "loop-a.md")
    os.symlink("loop-a.md", root / "loop-b.md")
    os.symlink("/etc/hostname", root / "outside.md")


EXPECTED_REASONS = {
    "broken-yaml.memory.md": "broken YAML frontmatter at line 2",
    "empty.md": "empty file",
    "binary.md": "binary file (it contains NUL bytes), not text",
    "latin1.md": "not valid UTF-8 (byte 5 is 0xe9); convert the file to UTF-8 to index it",
    "huge.md": "file is 20.0 MB, over the 5 MB limit; raise it with --max-file-size",
    "loop-a.md": "symlink loop",
    "loop-b.md": "symlink loop",
    "outside.md": "symlink points outside the indexed folder (/etc/hostname)",
}


def test_bad_input_is_reported_and_skipped_and_the_rest_indexed(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    root = tmp_path / "bad"
    _bad_folder(root)
    report = index_paths(conn, [root])
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert {k: v.split(":")[0] for k, v in reasons.items()} == {
        k: v.split(":")[0] for k, v in EXPECTED_REASONS.items()
    }
    assert reasons["broken-yaml.memory.md"].startswith("broken YAML frontmatter at line 2: ")
    assert _titles(conn, "lighthouse keeper") == ["Good note"]
    recorded = {Path(r[0]).name for r in conn.execute("SELECT path FROM ingest_errors")}
    assert recorded == set(EXPECTED_REASONS)
    # Unchanged broken files are reported again without being re-read; fixed ones clear.
    again = index_paths(conn, [root])
    assert {Path(s.path).name for s in again.skipped} == set(EXPECTED_REASONS)
    (root / "empty.md").write_text("# Now full\n\nOf albatrosses.\n")
    third = index_paths(conn, [root])
    assert "empty.md" not in {Path(s.path).name for s in third.skipped}
    assert _titles(conn, "albatrosses") == ["Now full"]


@pytest.mark.slow
def test_raising_the_size_limit_indexes_the_big_file(conn: sqlite3.Connection, tmp_path: Path) -> None:
    root = tmp_path / "big"
    root.mkdir()
    (root / "big.md").write_text("# Big\n\n" + "quokka " * 1_000_000)
    assert [s.reason for s in index_paths(conn, [root]).skipped] == [
        "file is 6.7 MB, over the 5 MB limit; raise it with --max-file-size"
    ]
    assert index_paths(conn, [root], max_file_size=10 * 1024 * 1024).skipped == []
    assert _titles(conn, "quokka") == ["Big"]


def test_a_file_that_breaks_keeps_its_last_good_version(conn: sqlite3.Connection, sample_copy: Path) -> None:
    root = sample_copy / "memories"
    index_paths(conn, [root])
    memory = root / "decisions" / "project" / "use-sqlite-wal.memory.md"
    memory.write_text("---\ntitle: [oops\n---\nhalf-written\n")
    report = index_paths(conn, [root])
    assert [Path(s.path).name for s in report.skipped] == ["use-sqlite-wal.memory.md"]
    assert _titles(conn, "journal_mode WAL job queue")[0] == "Use SQLite in WAL mode for the job queue"
    assert (
        conn.execute("SELECT reason FROM ingest_errors").fetchone()[0].startswith("broken YAML frontmatter")
    )


@pytest.mark.slow
def test_unreadable_folder_keeps_what_was_indexed(tmp_path: Path, sample_copy: Path) -> None:
    "Run without root's DAC override (util-linux setpriv), so the folder really is unreadable."
    db_file = tmp_path / "folder.db"
    conn = db.connect(db_file)
    index_paths(conn, [sample_copy])
    conn.close()
    (sample_copy / "serena" / "git").chmod(0)
    code = (
        "import sys; from memdex.ingest.pipeline import index_paths; from memdex.store import db; "
        "r = index_paths(db.connect(sys.argv[1]), [sys.argv[2]]); "
        "print(r.removed, [s.reason for s in r.skipped])"
    )
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    try:
        out = subprocess.run(
            [*prefix, sys.executable, "-c", code, str(db_file), str(sample_copy)],
            capture_output=True,
            text=True,
            check=True,
        )
    finally:
        (sample_copy / "serena" / "git").chmod(0o755)
    assert out.stdout.strip() == "0 ['cannot list folder: Permission denied']"
    assert "Git: Cleaning Up Worktrees" in _titles(db.connect(db_file), "worktree prune")


def test_unreadable_file(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """A file the indexer may not read is reported and skipped; the rest is indexed.

    Root reads everything, so under root the index runs in a child process whose capability
    bounding set lacks DAC override (util-linux setpriv): the kernel's own permission check.
    """
    root = tmp_path / "notes"
    root.mkdir()
    (root / "ok.md").write_text("# Readable\n\nPenguins waddle.\n")
    (root / "secret.md").write_text("# Secret\n")
    (root / "secret.md").chmod(0)
    db_file = tmp_path / "perm.db"
    code = (
        "import sys; from memdex.ingest.pipeline import index_paths; from memdex.store import db; "
        "r = index_paths(db.connect(sys.argv[1]), [sys.argv[2]]); "
        "print([(s.path.rsplit('/', 1)[1], s.reason) for s in r.skipped])"
    )
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    out = subprocess.run(
        [*prefix, sys.executable, "-c", code, str(db_file), str(root)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[('secret.md', 'cannot read file: Permission denied')]"
    assert _titles(db.connect(db_file), "penguins") == ["Readable"]


def test_progress_is_reported_per_file(conn: sqlite3.Connection, sample_copy: Path) -> None:
    calls: list[tuple[int, int]] = []
    index_paths(conn, [sample_copy / "notes"], progress=lambda done, total: calls.append((done, total)))
    assert calls == [(1, 3), (2, 3), (3, 3)]


def test_ignored_paths(conn: sqlite3.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "notes"
    for rel in ["a.md", ".a.md.swp", "b.md~", "node_modules/x.md", ".git/y.md", "drafts/c.md", "#d.md#"]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("# T\n\nwombat\n")
    monkeypatch.setenv("MEMDEX_IGNORE", "drafts")
    index_paths(conn, [root])
    assert [r[0] for r in conn.execute("SELECT rel_path FROM files")] == ["a.md"]


def test_reindexing_every_remembered_root(conn: sqlite3.Connection, sample_copy: Path) -> None:
    roots = [sample_copy / "notes", sample_copy / "serena"]
    index_paths(conn, roots)
    remembered = [Path(r["path"]) for r in conn.execute(db.query("root_paths"))]
    assert sorted(remembered) == sorted(roots)


def test_single_file_root(conn: sqlite3.Connection, sample_copy: Path) -> None:
    note = sample_copy / "notes" / "chatgpt-prompting-tips.md"
    report = index_paths(conn, [note])
    assert report.added == 1
    assert _titles(conn, "verbatim error") == ["Prompting tips that worked with ChatGPT"]


def test_missing_path_is_an_error(conn: sqlite3.Connection, tmp_path: Path) -> None:
    from memdex.errors import MemdexError

    with pytest.raises(MemdexError, match=r"nope: no such file or folder"):
        index_paths(conn, [tmp_path / "nope"])


FTS_TABLES = ("documents_fts", "chunks_fts", "bodies_fts", "synonyms_fts")


def fts_integrity(conn: sqlite3.Connection) -> None:
    "FTS5's own check, including that each index matches its content table (rank = 1)."
    for table in FTS_TABLES:
        conn.execute(f"INSERT INTO {table} ({table}, rank) VALUES ('integrity-check', 1)")


def test_full_text_indexes_stay_consistent_through_edits(conn: sqlite3.Connection, sample_copy: Path) -> None:
    index_paths(conn, [sample_copy])
    fts_integrity(conn)
    note = sample_copy / "notes" / "chatgpt-prompting-tips.md"
    note.write_text(note.read_text() + "\n## More\n\nNarwhals.\n")
    (sample_copy / "serena" / "git" / "git-rebase-conflicts.md").unlink()
    (sample_copy / "serena" / "skills-git-index.md").write_text(
        "| Keywords | File |\n|---|---|\n| prune | [w](git/git-worktree-cleanup.md) |\n"
    )
    index_paths(conn, [sample_copy])
    fts_integrity(conn)
    assert [h.title for h in search(conn, "narwhals").hits] == ["Prompting tips that worked with ChatGPT"]
    body_rows = conn.execute("SELECT count(*) FROM bodies_fts WHERE bodies_fts MATCH 'rerere'").fetchone()[0]
    assert body_rows == 0
    assert (
        conn.execute("SELECT count(*) FROM document_bodies").fetchone()[0]
        == conn.execute("SELECT count(*) FROM documents").fetchone()[0]
    )


def test_index_changes_follows_files_folders_and_moves(conn: sqlite3.Connection, sample_copy: Path) -> None:
    from memdex.ingest.pipeline import index_changes

    root = sample_copy / "notes"
    index_paths(conn, [root])
    new = root / "new.md"
    new.write_text("# New\n\nAbout ocelots.\n")
    report = index_changes(conn, [new])
    assert (report.added, report.seen) == (1, 1)
    assert _titles(conn, "ocelots") == ["New"]

    folder = root / "sub" / "deeper"
    folder.mkdir(parents=True)
    (folder / "a.md").write_text("# A\n\nMarmots.\n")
    (folder / "b.md").write_text("# B\n\nMarmots again.\n")
    assert index_changes(conn, [root / "sub"]).added == 2

    moved = root / "moved"
    (root / "sub").rename(moved)
    report = index_changes(conn, [root / "sub", moved])
    assert (report.removed, report.added) == (2, 2)
    assert {h.path for h in search(conn, "marmots").hits} == {
        str(moved / "deeper" / "a.md"),
        str(moved / "deeper" / "b.md"),
    }

    new.unlink()
    assert index_changes(conn, [new]).removed == 1
    assert _titles(conn, "ocelots") == []
    fts_integrity(conn)


def test_index_changes_handles_a_file_once_however_it_is_reached(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    """A watcher's batch names a new folder and the files in it (and both ends of a folder's
    move, and a deleted folder with its files). Previously the folder's walk queued a file and
    the file's own event queued it again: "UNIQUE constraint failed: files.path" (issue 26)."""
    from memdex.ingest.pipeline import index_changes

    root = tmp_path / "notes"
    root.mkdir()
    index_paths(conn, [root])
    folder = root / "d"
    (folder / "e").mkdir(parents=True)
    (folder / "n.md").write_text("# N\n\nAbout narwhals.\n")
    (folder / "e" / "m.md").write_text("# M\n\nAbout manatees.\n")
    report = index_changes(conn, [folder, folder / "n.md", folder / "e", folder / "e" / "m.md"])
    assert (report.added, report.seen) == (2, 2)
    folder.rename(root / "moved")
    report = index_changes(conn, [folder, folder / "n.md", root / "moved", root / "moved" / "n.md"])
    assert (report.removed, report.added, report.seen) == (2, 2, 2)
    shutil.rmtree(root / "moved")
    report = index_changes(conn, [root / "moved", root / "moved" / "n.md", root / "moved" / "e" / "m.md"])
    assert report.removed == 2
    assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 0
    fts_integrity(conn)


def test_index_changes_ignores_what_index_ignores(
    conn: sqlite3.Connection, sample_copy: Path, tmp_path: Path
) -> None:
    from memdex.ingest.pipeline import index_changes

    root = sample_copy / "notes"
    index_paths(conn, [root])
    (root / ".git").mkdir()
    (root / ".git" / "x.md").write_text("# Hidden\n")
    (root / ".draft.md.swp").write_text("swap")
    outside = tmp_path / "elsewhere.md"
    outside.write_text("# Elsewhere\n")
    report = index_changes(conn, [root / ".git" / "x.md", root / ".draft.md.swp", outside])
    assert (report.seen, report.added) == (0, 0)


def test_index_changes_keeps_a_roots_kind_and_refreshes_index_topics(
    conn: sqlite3.Connection, sample_copy: Path
) -> None:
    from memdex.ingest.pipeline import index_changes

    root = sample_copy / "serena"
    index_paths(conn, [root])
    index = root / "skills-ci-index.md"
    index.write_text(index.read_text().replace("intermittent", "heisenbug"))
    index_changes(conn, [index])
    hit = search(conn, "heisenbug").hits[0]
    assert (hit.key, hit.kind, hit.match_layer) == ("ci/ci-flaky-test-quarantine", "serena", 1)


def test_a_root_registered_inside_another_takes_its_files_over(
    conn: sqlite3.Connection, sample_copy: Path
) -> None:
    index_paths(conn, [sample_copy / "notes"])
    inner = sample_copy / "notes" / "chatgpt-prompting-tips.md"
    report = index_paths(conn, [inner])
    assert (report.unchanged, report.added) == (1, 0)
    owner = conn.execute(
        "SELECT r.path FROM files f JOIN roots r ON r.id = f.root_id WHERE f.path = ?", (str(inner),)
    )
    assert owner.fetchone()[0] == str(inner)
    outer = index_paths(conn, [sample_copy / "notes"])  # the inner root's file is no longer the outer's
    assert (outer.seen, outer.removed) == (2, 0)
    assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 3


def test_symlinks_inside_the_root_do_not_duplicate_results(conn: sqlite3.Connection, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    (root / "sub").mkdir(parents=True)
    (root / "real.md").write_text("# Real\n\nAbout ibises.\n")
    os.symlink("real.md", root / "alias.md")
    os.symlink("../real.md", root / "sub" / "again.md")
    report = index_paths(conn, [root])
    assert report.skipped == []
    assert [h.path for h in search(conn, "ibises").hits] == [str(root / "real.md")]


@pytest.mark.slow
def test_a_very_deep_tree(conn: sqlite3.Connection, tmp_path: Path) -> None:
    root = tmp_path / "deep"
    folder = root
    root.mkdir()
    for _ in range(1100):  # deeper than Python's recursion limit; made one level at a time
        folder = folder / "d"
        folder.mkdir()
    (folder / "bottom.md").write_text("# Bottom\n\nAbout anglerfish.\n")
    try:
        index_paths(conn, [root])
        assert [h.title for h in search(conn, "anglerfish").hits] == ["Bottom"]
    finally:  # shutil.rmtree (pytest's clean-up) recurses per level: remove it deepest first
        (folder / "bottom.md").unlink()
        while folder != tmp_path:
            folder.rmdir()
            folder = folder.parent


def test_files_are_parsed_with_no_write_lock_held(conn: sqlite3.Connection, tmp_path: Path) -> None:
    "Another writer gets in while a slow file is being parsed: the lock is held only to write."
    from memdex.ingest import register, sources
    from memdex.ingest.kinds.note import NoteKind

    other = db.connect(conn.execute("PRAGMA database_list").fetchone()[2])
    other.execute("PRAGMA busy_timeout = 0")
    got_in: list[bool] = []

    class SlowKind(NoteKind):
        name = "slow"

        def parse(self, source):  # type: ignore[no-untyped-def]
            other.execute("BEGIN IMMEDIATE")  # fails at once if the indexer holds the lock
            other.execute("ROLLBACK")
            got_in.append(True)
            return super().parse(source)

    root = tmp_path / "slow"
    root.mkdir()
    for i in range(3):
        (root / f"n{i}.md").write_text(f"# N{i}\n")
        (root / f"s{i}.slow.md").write_text(f"# S{i}\n")
    register(SlowKind())
    try:
        report = index_paths(conn, [root], kind="slow")
    finally:
        del sources()["slow"]
        other.close()
    assert got_in == [True] * 6 and report.added == 6


def test_an_error_leaves_no_transaction_open_and_nothing_half_written(
    conn: sqlite3.Connection, sample_copy: Path
) -> None:
    from memdex.errors import MemdexError

    with pytest.raises(MemdexError, match="missing: no such file or folder"):
        index_paths(conn, [sample_copy / "notes", sample_copy / "missing"])
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM roots").fetchone()[0] == 0


@pytest.mark.slow
def test_a_permission_fix_is_noticed_without_touching_the_file(tmp_path: Path) -> None:
    "chmod changes neither size nor mtime; an unreadable file is re-checked on every run."
    root = tmp_path / "notes"
    root.mkdir()
    (root / "later.md").write_text("# Later\n\nAbout gannets.\n")
    (root / "later.md").chmod(0)
    db_file = tmp_path / "perm.db"
    code = (
        "import sys; from memdex.ingest.pipeline import index_paths; from memdex.store import db; "
        "r = index_paths(db.connect(sys.argv[1]), [sys.argv[2]]); print(len(r.skipped))"
    )
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []

    def run() -> str:
        args = [*prefix, sys.executable, "-c", code, str(db_file), str(root)]
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()

    assert run() == "1"
    (root / "later.md").chmod(0o644)
    assert run() == "0"
    assert _titles(db.connect(db_file), "gannets") == ["Later"]


def test_document_ids_are_never_reused(conn: sqlite3.Connection, tmp_path: Path) -> None:
    root = tmp_path / "ids"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n")
    (root / "b.md").write_text("# Beta\n")
    index_paths(conn, [root])
    beta = conn.execute("SELECT id FROM documents WHERE title = 'Beta'").fetchone()[0]
    (root / "b.md").unlink()
    (root / "c.md").write_text("# Gamma\n")
    index_paths(conn, [root])
    gamma = conn.execute("SELECT id FROM documents WHERE title = 'Gamma'").fetchone()[0]
    assert gamma > beta
