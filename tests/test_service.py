"""memdex watch as a whole: real files, real events, real processes and signals."""

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from memdex.doors.status import writer_status
from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db
from memdex.store.lock import WriterBusy, WriterLock, holder
from memdex.watch.handoff import index_exclusive
from memdex.watch.service import WatchService, read_state

from .ingest.test_pipeline import fts_integrity
from .test_watcher import wait_until


@contextmanager
def running(db_path: Path, roots: list[Path] | None = None) -> Iterator[WatchService]:
    "A watch service on a thread of this process (signals are the subprocess tests' job)."
    service = WatchService(db_path, roots or [], debounce=0.05)
    failures: list[BaseException] = []

    def target() -> None:
        try:
            service.run()
        except BaseException as exc:  # reported below: a thread's exception would vanish
            failures.append(exc)

    thread = threading.Thread(target=target, name="memdex-watch")
    thread.start()
    try:
        assert service.wait_ready(20), "the watcher did not finish its start-up catch-up"
        assert not failures, failures
        yield service
    finally:
        service.stop()
        thread.join(20)
        assert not thread.is_alive()
        assert not failures, failures


def titles(db_path: Path, query: str) -> list[str]:
    conn = db.connect(db_path, create=False)
    try:
        return [h.title for h in search(conn, query).hits]
    finally:
        conn.close()


def paths(db_path: Path, query: str) -> list[str]:
    conn = db.connect(db_path, create=False)
    try:
        return [h.path for h in search(conn, query).hits]
    finally:
        conn.close()


@pytest.fixture
def notes(tmp_path: Path, db_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "first.md").write_text("# First\n\nAbout herons.\n")
    conn = db.connect(db_path)
    index_paths(conn, [root])
    conn.close()
    return root


def test_changes_become_searchable(db_path: Path, notes: Path) -> None:
    with running(db_path):
        (notes / "new.md").write_text("# New\n\nAbout pelicans.\n")
        wait_until(lambda: titles(db_path, "pelicans") == ["New"])
        (notes / "new.md").write_text("# Renamed\n\nAbout pelicans and gulls.\n")
        wait_until(lambda: titles(db_path, "gulls") == ["Renamed"])
        (notes / "sub").mkdir()
        (notes / "sub" / "deep.md").write_text("# Deep\n\nAbout cormorants.\n")
        wait_until(lambda: titles(db_path, "cormorants") == ["Deep"])
        (notes / "sub").rename(notes / "moved")
        wait_until(
            lambda: [h for h in search(db.connect(db_path), "cormorants").hits][0].path.endswith(
                "moved/deep.md"
            )
        )
        (notes / "first.md").unlink()
        wait_until(lambda: titles(db_path, "herons") == [])
    state = read_state(db_path)
    assert state is not None and state["stopped_at"] and state["last_batch"]["lag_s"] < 10


def test_files_that_arrive_inside_a_new_folder_are_indexed_by_their_batch(
    db_path: Path, notes: Path, tmp_path: Path
) -> None:
    """Issue 26: a folder and the files in it arrive in one batch, and its walk reached each
    file before its own event did. Previously the file was written twice ("UNIQUE constraint
    failed: files.path"), the batch failed and waited for a full catch-up, every time."""
    import shutil

    template = tmp_path / "template"
    (template / "deeper").mkdir(parents=True)
    (template / "a.md").write_text("# Gannets\n\nAbout gannets.\n")
    (template / "deeper" / "b.md").write_text("# Boobies\n\nAbout boobies.\n")
    with running(db_path) as service:
        caught_up = service.state["catch_up"]
        (notes / "d").mkdir()  # mkdir d && echo ... > d/n.md
        (notes / "d" / "n.md").write_text("# Fulmars\n\nAbout fulmars.\n")
        shutil.copytree(template, notes / "copied")  # cp -r
        wait_until(
            lambda: (
                [titles(db_path, w) for w in ("fulmars", "gannets", "boobies")]
                == [["Fulmars"], ["Gannets"], ["Boobies"]]
            )
        )
        assert service.state["errors"] == []
        assert service.state["catch_up"] is caught_up  # found by the batch, not by a catch-up
    conn = db.connect(db_path)
    assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 4
    conn.close()


def test_a_growing_agent_session_is_read_on_as_it_grows(db_path: Path, tmp_path: Path) -> None:
    "A Claude Code log appended to line by line, a torn line among them, while the watcher runs."
    from .ingest.test_sessions import claude_line, conversation

    root = tmp_path / "projects"
    (root / "-work-proj").mkdir(parents=True)
    log = root / "-work-proj" / "s-1.jsonl"
    log.write_text("\n".join(conversation(0, 30, None)) + "\n")
    conn = db.connect(db_path)
    index_paths(conn, [root])
    whole_size = conn.execute("SELECT whole_size FROM file_tails").fetchone()[0]
    conn.close()
    with running(db_path):
        line = claude_line(30, "user", "what about the albatross migration", "u29")
        with log.open("a") as f:
            f.write(line[:25])  # mid-write
            f.flush()
        with log.open("a") as f:
            f.write(line[25:] + "\n")
        wait_until(lambda: titles(db_path, "albatross") == ["message 0 about topic0 and the weather"])
        with log.open("a") as f:
            f.write(claude_line(31, "assistant", "the albatross flies south in winter", "u30") + "\n")
        wait_until(lambda: len(search(db.connect(db_path), "south winter albatross").hits) == 1)
    conn = db.connect(db_path)
    assert conn.execute("SELECT whole_size FROM file_tails").fetchone()[0] == whole_size  # read on
    assert conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0] == 0
    conn.close()


def test_start_up_catches_up_with_what_changed_while_off(db_path: Path, notes: Path) -> None:
    (notes / "while-off.md").write_text("# Off\n\nAbout puffins.\n")
    (notes / "first.md").unlink()
    with running(db_path) as service:
        assert service.state["catch_up"]["added"] == 1 and service.state["catch_up"]["removed"] == 1
        assert titles(db_path, "puffins") == ["Off"]
        assert titles(db_path, "herons") == []


@pytest.mark.slow
def test_survives_a_bad_file_and_a_root_deleted_and_recreated(db_path: Path, notes: Path) -> None:
    import shutil

    with running(db_path) as service:
        (notes / "broken.memory.md").write_text("---\ntitle: [oops\n---\n")  # a note would be read as text
        conn = db.connect(db_path)
        wait_until(lambda: conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0] == 1)
        shutil.rmtree(notes)
        wait_until(lambda: titles(db_path, "herons") == [])
        notes.mkdir()
        (notes / "back.md").write_text("# Back\n\nAbout albatrosses.\n")
        wait_until(lambda: titles(db_path, "albatrosses") == ["Back"], timeout=15)
        (notes / "later.md").write_text("# Later\n\nAbout terns.\n")
        wait_until(lambda: titles(db_path, "terns") == ["Later"])
        assert service.exit_code == 0
        conn.close()


def test_one_writer_at_a_time(db_path: Path, notes: Path) -> None:
    with running(db_path):
        with pytest.raises(WriterBusy, match=r"memdex watch \(pid \d+, since .*\) is already writing to"):
            WriterLock(db_path, "index").acquire()
        with pytest.raises(WriterBusy):
            WatchService(db_path, []).run()
        assert writer_status(db_path)["role"] == "watch"
        assert writer_status(db_path)["pid"] == os.getpid()
    assert holder(db_path) is None
    assert writer_status(db_path)["running"] is False


@pytest.mark.slow
def test_index_hands_its_work_to_the_watcher(db_path: Path, notes: Path, tmp_path: Path) -> None:
    extra = tmp_path / "extra"
    extra.mkdir()
    (extra / "e.md").write_text("# Extra\n\nAbout ospreys.\n")
    with running(db_path):
        handed: list[dict[str, object]] = []
        report = index_exclusive(db_path, {"paths": [str(extra)]}, on_handoff=handed.append)
        assert handed and handed[0]["role"] == "watch"
        assert report["added"] == 1
        assert titles(db_path, "ospreys") == ["Extra"]
        (extra / "f.md").write_text("# Fresh\n\nAbout kestrels.\n")  # the new root is watched now
        wait_until(lambda: titles(db_path, "kestrels") == ["Fresh"])


@pytest.mark.slow
def test_readers_never_see_an_error_during_heavy_writes(db_path: Path, notes: Path) -> None:
    errors: list[str] = []
    searches = [0]
    stop = threading.Event()

    def reader() -> None:
        conn = db.connect(db_path, create=False)
        while not stop.is_set():
            try:
                search(conn, "burst words")
                conn.execute("SELECT count(*) FROM chunks").fetchone()
                searches[0] += 1
            except Exception as exc:  # any error at all is the failure this test looks for
                errors.append(repr(exc))
        conn.close()

    with running(db_path):
        threads = [threading.Thread(target=reader) for _ in range(3)]
        for t in threads:
            t.start()
        for i in range(400):
            (notes / f"b{i:04d}.md").write_text(f"# Burst {i}\n\nburst words number {i}\n")
        conn = db.connect(db_path)
        wait_until(lambda: conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 401, timeout=30)
        conn.close()
        stop.set()
        for t in threads:
            t.join()
    assert errors == []
    assert searches[0] > 10


def _watch_process(db_path: Path) -> subprocess.Popen[str]:
    "memdex watch in its own process, its log in a file (an unread pipe could fill and block it)."
    log = open(f"{db_path}.test-log", "w")  # noqa: SIM115 - closed with the process below
    proc = subprocess.Popen(
        [sys.executable, "-m", "memdex", "--db", str(db_path), "watch"], stderr=log, text=True
    )
    log.close()  # the child has its own copy
    wait_until(
        lambda: (
            (holder(db_path) or {}).get("pid") == proc.pid
            and read_state(db_path) is not None
            and (read_state(db_path) or {}).get("catch_up") is not None
        ),
        timeout=20,
    )
    return proc


@pytest.mark.slow
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 0), (signal.SIGINT, 130)])
def test_signals_stop_it_cleanly(db_path: Path, notes: Path, sig: int, code: int) -> None:
    proc = _watch_process(db_path)
    (notes / "last.md").write_text("# Last\n\nAbout skuas.\n")
    wait_until(lambda: titles(db_path, "skuas") == ["Last"])
    proc.send_signal(sig)
    assert proc.wait(20) == code
    assert "INFO stopped" in Path(f"{db_path}.test-log").read_text()
    assert holder(db_path) is None


@pytest.mark.slow
def test_an_unreadable_folder_does_not_stop_it(db_path: Path, notes: Path) -> None:
    "Under root, the watcher runs without DAC override (util-linux setpriv) so the kernel refuses."
    locked = notes / "locked"
    locked.mkdir()
    (locked / "secret.md").write_text("# Secret\n\nAbout wrens.\n")
    conn = db.connect(db_path)
    index_paths(conn, [notes])
    conn.close()
    locked.chmod(0)
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    log = open(f"{db_path}.test-log", "w")  # noqa: SIM115
    proc = subprocess.Popen(
        [*prefix, sys.executable, "-m", "memdex", "--db", str(db_path), "watch"], stderr=log
    )
    log.close()
    try:
        wait_until(lambda: (read_state(db_path) or {}).get("catch_up") is not None, timeout=20)
        (notes / "open.md").write_text("# Open\n\nAbout finches.\n")
        wait_until(lambda: titles(db_path, "finches") == ["Open"])
        assert proc.poll() is None
        assert titles(db_path, "wrens") == ["Secret"]  # its last good version is kept
    finally:
        proc.terminate()
        assert proc.wait(20) == 0
        locked.chmod(0o755)
    assert (
        f"skipped {locked}: cannot list folder: Permission denied" in Path(f"{db_path}.test-log").read_text()
    )


def _snapshot(db_path: Path) -> dict[str, set[tuple[object, ...]]]:
    "What a search can see, by natural keys (row ids may differ between two indexes)."
    conn = sqlite3.connect(db_path)
    db.add_functions(conn)  # the full-text tables read their content through memdex_words
    fts_integrity(conn)
    q = lambda sql: set(conn.execute(sql).fetchall())  # noqa: E731
    snap = {
        "documents": q(
            "SELECT f.path, d.key, d.kind, d.title, d.tags, d.topics, d.date, d.size_bytes "
            "FROM documents d JOIN files f ON f.id = d.file_id"
        ),
        "chunks": q(
            "SELECT f.path, c.seq, c.heading, c.text, c.line_start, c.line_end FROM chunks c "
            "JOIN documents d ON d.id = c.document_id JOIN files f ON f.id = d.file_id"
        ),
        "topics": q(
            "SELECT f.path, t.topic, t.source, t.line FROM topics t "
            "JOIN documents d ON d.id = t.document_id JOIN files f ON f.id = d.file_id"
        ),
        "files": q("SELECT path, kind, size, sha256 FROM files"),
    }
    conn.close()
    return snap


@pytest.mark.slow
def test_kill_9_mid_burst_then_restart_equals_a_fresh_index(tmp_path: Path, sample_copy: Path) -> None:
    db_path = tmp_path / "watched.db"
    root = sample_copy / "serena"
    conn = db.connect(db_path)
    index_paths(conn, [root])
    conn.close()
    proc = _watch_process(db_path)
    burst = root / "burst"
    burst.mkdir()
    for i in range(2000):
        (burst / f"m{i:04d}.md").write_text(f"# Memory {i}\n\nburst memory number {i} about grebes\n")
    (root / "skills-git-index.md").write_text(  # an index edit in the same burst
        (root / "skills-git-index.md").read_text() + "| grebes birds | [m0007](burst/m0007.md) |\n"
    )
    reader = db.connect(db_path, create=False)
    wait_until(lambda: reader.execute("SELECT count(*) FROM documents").fetchone()[0] > 300, timeout=30)
    proc.kill()  # SIGKILL: no clean-up of any kind
    proc.wait(10)
    done = reader.execute("SELECT count(*) FROM documents").fetchone()[0]
    reader.close()
    assert done < 2004, "the watcher finished before the kill: the test proves nothing"

    with running(db_path):
        pass  # start-up catch-up, then stop
    fresh = tmp_path / "fresh.db"
    conn = db.connect(fresh)
    index_paths(conn, [root])
    conn.close()
    recovered, expected = _snapshot(db_path), _snapshot(fresh)
    for table in expected:
        assert recovered[table] == expected[table], table
    assert len(expected["documents"]) == 2004
    assert ("burst/m0007",) and any(
        t[1] == "grebes" and t[0].endswith("m0007.md") for t in expected["topics"]
    )
