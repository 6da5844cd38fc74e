"""Faults with real processes on real files: kill -9 during `memdex index` and during the
watcher's catch-up, a full disk, read-only and locked indexes, newer and older schemas.

After each fault the index passes PRAGMA integrity_check and FTS5's integrity-check
(``db.check``), and a re-run converges to exactly what a fresh index of the same files holds.
The long versions, with many random kill points, are ``scripts/reliability.py``, whose
helpers these tests use (kill -9 of a watcher mid-burst is in test_service.py).
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memdex import tokens
from memdex.errors import DatabaseError, SchemaError
from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db
from memdex.watch.service import WatchService

from .test_watcher import wait_until

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
import synth  # noqa: E402
from reliability_kit import disk, kills, state  # noqa: E402

NOTES = 2500  # above one write batch (1,000 files), so a kill can fall between commits
# The watcher's catch-up commits every 1,000 files or second (writer.BATCH_FILES and
# BATCH_SECONDS): above one batch, it commits at least twice however fast the machine, and
# the 500 files after the first commit leave time to kill it before the last.
CATCH_UP_NOTES = 1500


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[Any]]]:
    "A generated tree of notes, and what a clean index of it holds."
    work = tmp_path_factory.mktemp("faults")
    root = work / "notes"
    synth.write_notes(root, NOTES)
    return root, state.fresh_index(root, work / "fresh.db")


def _roots_committed(db_path: Path) -> bool:
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
        try:
            return bool(conn.execute("SELECT count(*) FROM roots").fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return False


KILL_POINTS: dict[str, Callable[[Path], bool]] = {
    "creating the database": lambda p: p.exists(),
    "before any document is committed": _roots_committed,
    "between two write batches": lambda p: state.committed(p) > 0,
}


@pytest.mark.slow
@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_kill_9_during_index_then_a_rerun_converges(
    tree: tuple[Path, dict[str, list[Any]]], tmp_path: Path, point: str
) -> None:
    root, expected = tree
    db_path = tmp_path / "killed.db"
    info = kills.kill_index(db_path, root, when=lambda: KILL_POINTS[point](db_path))
    assert info["killed_mid_run"], "memdex index finished before the kill: the test proves nothing"
    assert info["documents_at_kill"] < len(expected["documents"])
    assert state.problems(db_path) == []  # what the kill left opens, recovers and checks clean
    rerun = state.memdex_cli(db_path, "index", "--quiet", str(root))
    assert rerun.returncode == 0, rerun.stderr
    assert state.problems(db_path) == []
    assert state.differences(state.canonical(db_path), expected) == {}


@pytest.mark.slow
def test_kill_9_during_the_watchers_catch_up_then_a_restart_converges(tmp_path: Path) -> None:
    "Files written while the watcher was off; it is killed while catching up with them."
    root = tmp_path / "watched"
    synth.write_notes(root / "before", 100, seed=1)
    db_path = tmp_path / "watched.db"
    state.fresh_index(root, db_path)
    synth.write_notes(root / "while-off", CATCH_UP_NOTES, seed=2)
    (root / "before" / "decisions" / "project" / "m000000.memory.md").unlink()
    proc = subprocess.Popen([*state.MEMDEX, "--db", str(db_path), "watch"], stderr=subprocess.DEVNULL)
    try:
        wait_until(lambda: state.committed(db_path, root / "while-off") > 0 or proc.poll() is not None, 60)
        alive = proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
    assert alive and state.committed(db_path, root / "while-off") < CATCH_UP_NOTES, (
        "the catch-up was not interrupted"
    )
    assert state.problems(db_path) == []
    again = kills.start_watch(db_path, tmp_path / "watch.log")  # its catch-up is the re-run
    assert kills.stop(again) == 0
    expected = state.fresh_index(root, tmp_path / "fresh.db")
    assert state.problems(db_path) == []
    assert state.differences(state.canonical(db_path), expected) == {}


# -- a full disk -------------------------------------------------------------------------------
def _judge(db_path: Path, roots: list[Path], before: dict[str, Any], got: dict[str, Any]) -> dict[str, Any]:
    verdict = disk.judge_full_disk(db_path, roots, before, got)
    assert verdict["problems"] == []
    assert verdict["files_half_written"] == []  # each file as it was, or as the run would write it
    assert verdict["converged_after_room_returned"]
    return verdict


@pytest.mark.slow
@pytest.mark.skipif(not disk.can_mount_tmpfs(), reason="no mount namespace for a tmpfs here")
def test_a_full_disk_is_a_clear_error_and_keeps_the_previous_state(tmp_path: Path) -> None:
    "A real ENOSPC: the index on a tiny tmpfs, in a mount namespace of its own (unshare)."
    db_path, roots, before = disk.disk_scenario(tmp_path, "tmpfs", 100, 1500)
    got = disk.index_on_full_disk(db_path, roots, tmp_path / "out", 100_000)
    assert got["exit_code"] == 1
    assert got["stderr"] == (
        f"Error: The disk is full ({db_path}): nothing of the last batch was written. "
        "Free space and run again.\n"
    )
    assert state.canonical(db_path)["documents"] == before["documents"]  # the edits of the run: not there
    _judge(db_path, roots, before, got)


@pytest.mark.slow
def test_a_failing_disk_write_is_a_clear_error(tmp_path: Path) -> None:
    "A file-size limit (RLIMIT_FSIZE) fails SQLite's writes with EFBIG: a disk I/O error."
    db_path, roots, before = disk.disk_scenario(tmp_path, "fsize", 100, 1500)
    got = disk.index_over_file_size_limit(db_path, roots, 100_001)
    assert got["exit_code"] == 1 and "Traceback" not in got["stderr"]
    assert got["stderr"].startswith(f"Error: Writing the index failed ({db_path}) (disk I/O error: ")
    assert "nothing of the last batch was written. Check the disk and run again." in got["stderr"]
    _judge(db_path, roots, before, got)


@pytest.mark.slow
def test_a_page_limit_in_the_library_raises_database_error(tmp_path: Path) -> None:
    db_path, roots, before = disk.disk_scenario(tmp_path, "pages", 100, 1500)
    conn = db.connect(db_path)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 20:d}")
    with pytest.raises(DatabaseError, match=r"^The disk is full.*nothing of the last batch was written"):
        index_paths(conn, roots)
    assert not conn.in_transaction
    conn.close()
    _judge(db_path, roots, before, {"exit_code": None, "stderr": ""})


@pytest.mark.slow
def test_the_watcher_survives_a_full_disk_and_catches_up_when_room_returns(tmp_path: Path) -> None:
    root = tmp_path / "w"
    synth.write_notes(root, 50, seed=1)
    db_path = tmp_path / "w.db"
    state.fresh_index(root, db_path)
    service = WatchService(db_path, [], debounce=0.05)
    thread = threading.Thread(target=service.run, name="memdex-watch")
    thread.start()
    try:
        assert service.wait_ready(20)
        pages = service.conn.execute("PRAGMA page_count").fetchone()[0]
        service.conn.execute(f"PRAGMA max_page_count = {pages + 5:d}")  # the disk fills up
        synth.write_notes(tmp_path / "staging", 400, seed=2)
        (tmp_path / "staging").rename(root / "burst")  # one event (nested folders made in a
        # watched tree race watchdog's own inotify bookkeeping, which warns from its thread)
        wait_until(lambda: any("disk is full" in e["message"] for e in service.state["errors"]), 30)
        assert thread.is_alive() and state.committed(db_path, root / "burst") < 400
        service.conn.execute("PRAGMA max_page_count = 1073741823")  # room again
        wait_until(lambda: state.committed(db_path, root / "burst") == 400, 30)
    finally:
        service.stop()
        thread.join(20)
    assert not thread.is_alive() and service.exit_code == 0
    assert state.problems(db_path) == []
    assert state.differences(state.canonical(db_path), state.fresh_index(root, tmp_path / "fresh.db")) == {}


# -- read-only, locked ---------------------------------------------------------------------------
def _memdex(*args: str, unprivileged: bool = False) -> subprocess.CompletedProcess[str]:
    prefix = disk.unprivileged() if unprivileged else []
    return subprocess.run([*prefix, *state.MEMDEX, *args], capture_output=True, text=True)


@pytest.fixture
def small_index(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nzqalpha words\n")
    db_path = tmp_path / "idx" / "i.db"
    db_path.parent.mkdir()
    state.fresh_index(root, db_path)
    (root / "b.md").write_text("# Beta\n\nzqbeta words\n")  # something for a writer to do
    return db_path, root


def test_a_read_only_index_file_cannot_be_written_and_says_so(small_index: tuple[Path, Path]) -> None:
    db_path, root = small_index
    before = state.canonical(db_path)
    db_path.chmod(0o444)
    out = _memdex("--db", str(db_path), "index", str(root), unprivileged=True)
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr == (
        f"Error: The index is read-only ({db_path}): check the permissions of the database file "
        "and its folder.\n"
    )
    db_path.chmod(0o644)
    assert state.canonical(db_path) == before


@pytest.mark.slow
@pytest.mark.parametrize("command", ["index", "watch"])
def test_an_index_in_a_read_only_folder_cannot_be_written_and_says_so(
    small_index: tuple[Path, Path], command: str
) -> None:
    db_path, root = small_index
    db_path.parent.chmod(0o555)
    try:
        out = _memdex("--db", str(db_path), command, str(root), unprivileged=True)
        found = _memdex("--db", str(db_path), "search", "zqalpha", "--json", unprivileged=True)
    finally:
        db_path.parent.chmod(0o755)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr == (
        f"Error: Cannot write to the index at {db_path}: its lock file {db_path}.lock cannot be "
        "created (Permission denied). Check the permissions of that folder; searching needs only "
        "read access.\n"
    )
    assert found.returncode == 0 and json.loads(found.stdout)["results"][0]["title"] == "Alpha"


@pytest.mark.slow
def test_an_index_locked_by_another_program_is_a_clear_error(small_index: tuple[Path, Path]) -> None:
    "Another program holds SQLite's write lock (BEGIN EXCLUSIVE): memdex waits its 10 s, then says so."
    db_path, root = small_index
    other = sqlite3.connect(db_path, isolation_level=None)
    other.execute("BEGIN EXCLUSIVE")
    try:
        out = _memdex("--db", str(db_path), "index", str(root))
        found = _memdex("--db", str(db_path), "search", "zqalpha", "--json")  # WAL: readers go on
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert out.returncode == 1
    assert out.stderr == (
        f"Error: The index is locked by another writer ({db_path}): wait for it, or stop it, and run again.\n"
    )
    assert found.returncode == 0 and json.loads(found.stdout)["results"][0]["title"] == "Alpha"
    assert state.problems(db_path) == []


# -- schema versions ---------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("command", [["search", "zqalpha"], ["index"], ["status"]])
def test_an_index_from_a_newer_memdex_is_refused_by_every_command(
    small_index: tuple[Path, Path], command: list[str]
) -> None:
    db_path, _ = small_index
    raw = sqlite3.connect(db_path)
    raw.execute(f"PRAGMA user_version = {db.latest_version() + 1:d}")
    raw.close()
    before = db_path.read_bytes()
    out = _memdex("--db", str(db_path), *command)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert out.stderr == (
        f"Error: {db_path}: This index was written by a newer memdex (schema {db.latest_version() + 1}, "
        f"this memdex knows up to {db.latest_version()}). Upgrade memdex (pip install -U memdex) or use "
        "another --db.\n"
    )
    assert db_path.read_bytes() == before  # not touched, not "repaired"


def test_an_index_from_a_newer_memdex_is_an_error_of_the_mcp_tools(small_index: tuple[Path, Path]) -> None:
    from memdex.doors.mcp_server import Tools

    db_path, _ = small_index
    raw = sqlite3.connect(db_path)
    raw.execute("PRAGMA user_version = 999")
    raw.close()
    reply = Tools(db_path).search_knowledge_base("zqalpha")
    error = json.loads(reply.content[0].text)["error"]  # type: ignore[union-attr]
    assert (
        reply.is_error
        and error["type"] == "index_not_found"
        and "newer memdex (schema 999" in error["message"]
    )


# The full-text tables and triggers as migrations 1 to 10 made them: FTS5 made the tokens
# (porter unicode61) from the content tables themselves.
_PORTER_OBJECTS = re.compile(
    r"CREATE (VIRTUAL TABLE|TRIGGER) (documents_fts|chunks_fts|synonyms_fts|bodies_fts|chunks_vocab|"
    r"documents_vocab|documents_ad|documents_au|chunks_ad|chunks_au|synonyms_a[idu]|documents_bd_bodies)\b"
)


def _without_comments(sql: str) -> str:
    return "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))


def as_schema_12(db_path: Path) -> None:
    """Turn an index into what memdex wrote before migration 13: no secrets masked, counted or
    kept per root (the text itself is as the index was written)."""
    raw = sqlite3.connect(db_path)
    raw.executescript(
        """
        DROP TABLE secret_rules;
        DROP TABLE secrets_masked;
        ALTER TABLE roots DROP COLUMN keep_secrets;
        DELETE FROM memdex_migrations WHERE name = '0013_secrets';
        PRAGMA user_version = 12;
        """
    )
    raw.close()


def _as_schema_11(db_path: Path) -> None:
    "Turn an index into what memdex wrote before migration 12: no copies of sessions marked either."
    as_schema_12(db_path)
    raw = sqlite3.connect(db_path)
    raw.executescript(
        """
        DROP TRIGGER documents_ad_copies;
        DROP INDEX documents_copies;
        DROP INDEX documents_kind_key;
        ALTER TABLE documents DROP COLUMN copy_of;
        DELETE FROM memdex_migrations WHERE name = '0012_session_copies';
        PRAGMA user_version = 11;
        """
    )
    raw.close()


def _as_schema_10(db_path: Path) -> None:
    """Turn an index into what memdex wrote before migration 11, from the migrations' own SQL:
    migration 11's drops, then the tables and triggers of migrations 1 and 6, rebuilt."""
    _as_schema_11(db_path)
    sql = {name: _without_comments(text) for _, name, text in db.migrations()}
    drops = [s for s in db.statements(sql["0011_tokens"]) if s.startswith("DROP")]
    drops += ["DROP VIEW document_words", "DROP VIEW chunk_words", "DROP VIEW body_words"]
    drops += ["DROP VIEW synonym_words", "DROP TABLE tokenizer"]
    creates = [s for s in db.statements(sql["0001_initial"]) if _PORTER_OBJECTS.match(s)]
    creates = [s for s in creates if "documents_bd_bodies" not in s]  # migration 6 made it again
    creates += [s for s in db.statements(sql["0006_file_tails"]) if _PORTER_OBJECTS.match(s)]
    raw = sqlite3.connect(db_path)
    for statement in [*drops, *creates]:
        raw.execute(statement)
    for table in ("documents_fts", "chunks_fts", "synonyms_fts", "bodies_fts"):
        raw.execute(f"INSERT INTO {table} ({table}) VALUES ('rebuild')")
    raw.execute("DELETE FROM memdex_migrations WHERE name = '0011_tokens'")
    raw.execute("PRAGMA user_version = 10")
    raw.commit()
    raw.close()


def _as_schema_3(db_path: Path) -> None:
    """Turn an index into what memdex wrote before migration 4: the insert triggers back, no
    vectors and no date sources, the version and the migrations table as they were. Its rows
    are exactly what that memdex wrote; migration 6 must work out the same date sources."""
    _as_schema_10(db_path)
    raw = sqlite3.connect(db_path)
    raw.executescript(
        """
        DROP TRIGGER chunk_vectors_version_insert;
        DROP TRIGGER chunk_vectors_version_update;
        DROP TRIGGER chunk_vectors_version_delete;
        DROP TRIGGER chunks_version_delete;
        DROP TRIGGER chunks_version_insert;
        DROP TABLE vectors_version;
        DELETE FROM memdex_migrations WHERE name = '0010_vectors_version';
        DROP INDEX files_deleted;
        DROP INDEX files_sha256;
        ALTER TABLE files DROP COLUMN deleted_at;
        ALTER TABLE roots DROP COLUMN keep_deleted;
        DELETE FROM memdex_migrations WHERE name = '0009_keep_deleted';
        CREATE TRIGGER documents_ai AFTER INSERT ON documents BEGIN
            INSERT INTO documents_fts (rowid, title, description, tags, topics)
            VALUES (new.id, new.title, new.description, new.tags, new.topics);
        END;
        CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
            INSERT INTO chunks_fts (rowid, heading, text) VALUES (new.id, new.heading, new.text);
        END;
        DELETE FROM memdex_migrations WHERE name = '0004_explicit_fts_inserts';
        DROP TABLE chunk_vectors;
        DROP TABLE embedding_models;
        DELETE FROM memdex_migrations WHERE name = '0005_chunk_vectors';
        ALTER TABLE documents DROP COLUMN date_source;
        DELETE FROM memdex_migrations WHERE name = '0007_date_source';
        DROP TABLE file_tails;
        DROP TRIGGER documents_bd_bodies;
        DROP VIEW document_bodies;
        ALTER TABLE documents DROP COLUMN whole_text;
        CREATE VIEW document_bodies AS
        SELECT document_id AS id, group_concat(heading || char(10) || text, char(10)) AS body
        FROM (SELECT document_id, heading, text FROM chunks ORDER BY document_id, seq)
        GROUP BY document_id;
        CREATE TRIGGER documents_bd_bodies BEFORE DELETE ON documents BEGIN
            INSERT INTO bodies_fts (bodies_fts, rowid, body)
            SELECT 'delete', old.id, group_concat(heading || char(10) || text, char(10))
            FROM (SELECT heading, text FROM chunks WHERE document_id = old.id ORDER BY seq)
            HAVING count(*) > 0;
        END;
        DELETE FROM memdex_migrations WHERE name = '0006_file_tails';
        DELETE FROM memdex_migrations WHERE name = '0008_retry_broken_frontmatter';
        PRAGMA user_version = 3;
        """
    )
    raw.close()


def test_an_index_from_an_older_memdex_is_migrated_with_nothing_lost(
    tmp_path: Path, sample_copy: Path
) -> None:
    db_path = tmp_path / "old.db"
    expected = state.fresh_index(sample_copy, db_path)
    _as_schema_3(db_path)
    latest = db.latest_version()
    with pytest.raises(SchemaError, match=rf"needs migrating to schema {latest}"):  # a reader may not migrate
        db.connect(db_path, readonly=True)
    conn = db.connect(db_path)
    assert db.schema_version(conn) == db.latest_version()
    names = [r[0] for r in conn.execute("SELECT name FROM memdex_migrations ORDER BY name")]
    assert names == [name for _, name, _ in db.migrations()]
    assert db.check(conn) == []
    assert state.differences(state.canonical(db_path), expected) == {}
    assert [h.title for h in search(conn, "rerere").hits] == ["Git: Rebase Conflicts"]
    (sample_copy / "notes" / "new.md").write_text("# Fresh after migrating\n\nzqmigrated words\n")
    index_paths(conn, [sample_copy])  # today's writer on a migrated index: no double entries
    assert db.check(conn) == []
    assert [h.title for h in search(conn, "zqmigrated").hits] == ["Fresh after migrating"]
    conn.close()
    assert (
        state.differences(state.canonical(db_path), state.fresh_index(sample_copy, tmp_path / "fresh.db"))
        == {}
    )


def test_an_index_of_porter_stems_is_built_again_once_with_a_message(tmp_path: Path) -> None:
    """Issue 35: an index FTS5's porter tokenized (schema 10) gets memdex's tokens on its first
    use, saying so once; then "deploy" finds "deployment", as porter never let it."""
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Release notes\n\nThe deployment went fine.\n")
    db_path = tmp_path / "old.db"
    state.fresh_index(root, db_path)
    _as_schema_10(db_path)
    first = state.memdex_cli(db_path, "search", "deploy", "--json")
    assert first.returncode == 0, first.stderr
    assert [r["title"] for r in json.loads(first.stdout)["results"]] == ["Release notes"]
    assert first.stderr == (
        f"memdex: building the full-text index of {db_path} again for new word rules (1 passage; once)...\n"
        "memdex: done in 0.0 s\n"
    )
    again = state.memdex_cli(db_path, "search", "deploy", "--json")
    assert again.returncode == 0 and again.stderr == ""
    conn = db.connect(db_path)
    assert db.check(conn) == []
    conn.close()


def test_new_word_rules_build_the_full_text_index_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    "A new PyStemmer or Python (tokens.IDENTITY) and the tables are made again, not misread."
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Release notes\n\nThe deployment went fine.\n")
    db_path = tmp_path / "i.db"
    state.fresh_index(root, db_path)
    raw = sqlite3.connect(db_path)
    raw.execute("UPDATE tokenizer SET identity = 'memdex tokens 0' WHERE id = 1")
    raw.commit()
    raw.close()
    capsys.readouterr()
    with pytest.raises(SchemaError, match="built with other word rules than this memdex's"):
        db.connect(db_path, readonly=True)  # a reader never builds; with upgrade it asks a writer
    conn = db.connect(db_path, readonly=True, upgrade=True)
    assert "building the full-text index" in capsys.readouterr().err
    assert [h.title for h in search(conn, "deploying").hits] == ["Release notes"]
    conn.close()
    conn = db.connect(db_path)
    assert conn.execute("SELECT identity FROM tokenizer").fetchone()[0] == tokens.IDENTITY
    assert db.check(conn) == []
    conn.close()


def test_the_check_finds_a_full_text_index_out_of_step(conn: sqlite3.Connection, sample_copy: Path) -> None:
    "db.check is what every test above relies on: it must see damage, not just say ok."
    index_paths(conn, [sample_copy / "notes"])
    assert db.check(conn) == []
    conn.execute("INSERT INTO chunks_fts (rowid, heading, text) VALUES (987654, 'x', 'stray words')")
    assert db.check(conn) == ["chunks_fts: database disk image is malformed"]


def test_the_first_search_after_an_upgrade_migrates_the_index(tmp_path: Path, sample_copy: Path) -> None:
    "Searches open the index read-only; one an older memdex wrote is migrated first."
    db_path = tmp_path / "old.db"
    state.fresh_index(sample_copy, db_path)
    _as_schema_3(db_path)
    out = subprocess.run(
        [sys.executable, "-m", "memdex", "--db", str(db_path), "search", "rerere", "--json"],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["results"][0]["title"] == "Git: Rebase Conflicts"
    conn = db.connect(db_path, readonly=True)
    assert db.schema_version(conn) == db.latest_version()
    conn.close()
    conn = db.connect(db_path)  # FTS5's integrity check needs a writable connection
    assert db.check(conn) == []
    conn.close()


def test_an_old_index_that_cannot_be_written_says_what_to_do(tmp_path: Path, sample_copy: Path) -> None:
    "Without root's DAC override (util-linux setpriv), so the folder really is read-only."
    folder = tmp_path / "media"
    folder.mkdir()
    db_path = folder / "old.db"
    state.fresh_index(sample_copy, db_path)
    _as_schema_3(db_path)
    db_path.chmod(0o444)
    folder.chmod(0o555)
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    try:
        out = subprocess.run(
            [*prefix, sys.executable, "-m", "memdex", "--db", str(db_path), "status"],
            capture_output=True,
            text=True,
        )
    finally:
        folder.chmod(0o755)
    assert out.returncode != 0
    assert f"{db_path}: This index needs migrating to schema {db.latest_version()} (it is at 3)" in out.stderr
    assert "run `memdex index` (or any memdex command) once where it can be" in out.stderr
