"""OpenCode 1.2 and later: sessions in opencode.db (SQLite, WAL), read read-only, in part, live.

The databases are built from the schema OpenCode 1.18.33 leaves after its own migrations
(``opencode_1.18.33.sql``, read from a database the real CLI made), filled with real sessions
(opencode.nvim's recorded server events in ../shared) the way OpenCode's ``import`` writes
them; one slow test has the real CLI (npm ``opencode-ai``) write the database and checks that
memdex reads the same documents from both.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import platform
import shutil
import sqlite3
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memdex import Index
from memdex.ingest.locations import agent_locations
from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db
from tests.conftest import shared
from tests.ingest.test_agents import OPENCODE_EVENTS, lay_out_opencode
from tests.test_service import running
from tests.test_watcher import wait_until

SCHEMA = Path(__file__).with_name("opencode_1.18.33.sql")
OPENCODE_VERSION = "1.18.33"
EXPLORE = "ses_341f3e676ffez6WUF6zpok7dUZ"  # 44 parts; the subagent of:
PARENT = "ses_341f480cfffekQwFX2LabeJFAU"
MIDDLE_WORDS = "broader rendering chain tool dispatch"  # said by the assistant at part 17 of 44


def exports() -> list[dict[str, Any]]:
    "Each session of the recorded events as `opencode export` writes it: {info, messages: [{info, parts}]}."
    out = []
    for events in sorted(shared(*OPENCODE_EVENTS).glob("*.json")):
        sessions: dict[str, Any] = {}
        messages: dict[str, Any] = {}
        parts: dict[str, Any] = {}
        for event in json.loads(events.read_text("utf-8")):
            props = event.get("properties", {})
            if event["type"] in ("session.created", "session.updated"):
                sessions[props["info"]["id"]] = props["info"]
            elif event["type"] == "message.updated":
                messages[props["info"]["id"]] = props["info"]
            elif event["type"] == "message.part.updated":
                parts[props["part"]["id"]] = props["part"]
        for ident, info in sessions.items():
            said = sorted((m for m in messages.values() if m["sessionID"] == ident), key=lambda m: m["id"])
            out.append(
                {
                    "info": {"slug": ident[-8:].lower(), **info},  # OpenCode 1.2 requires a slug
                    "messages": [
                        {
                            "info": m,
                            "parts": sorted(
                                (p for p in parts.values() if p["messageID"] == m["id"]),
                                key=lambda p: p["id"],
                            ),
                        }
                        for m in said
                    ],
                }
            )
    return out


def new_database(path: Path) -> sqlite3.Connection:
    "An empty opencode.db as OpenCode 1.18.33 makes it (WAL, its tables), open as OpenCode holds it."
    conn = sqlite3.connect(path, isolation_level=None, timeout=0)  # timeout 0: a lock fails at once
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(SCHEMA.read_text("utf-8"))
    conn.execute(
        "INSERT INTO project (id, worktree, time_created, time_updated, sandboxes) VALUES ('global', '/', 0, 0, '[]')"
    )
    return conn


def now_ms() -> int:
    return int(time.time() * 1000)


def add_message(
    conn: sqlite3.Connection, session: str, info: dict[str, Any], parts: list[dict[str, Any]]
) -> None:
    "A message and its parts, as OpenCode's import writes them (ids and owners in columns, the rest JSON)."
    data = {k: v for k, v in info.items() if k not in ("id", "sessionID")}
    created = (info.get("time") or {}).get("created") or now_ms()
    conn.execute(
        "INSERT INTO message (id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?)",
        (info["id"], session, created, now_ms(), json.dumps(data)),
    )
    for part in parts:
        rest = {k: v for k, v in part.items() if k not in ("id", "sessionID", "messageID")}
        conn.execute(
            "INSERT INTO part (id, message_id, session_id, time_created, time_updated, data) VALUES (?, ?, ?, ?, ?, ?)",
            (part["id"], info["id"], session, now_ms(), now_ms(), json.dumps(rest)),
        )


def add_session(conn: sqlite3.Connection, export: dict[str, Any], directory: str | None = None) -> None:
    info = export["info"]
    conn.execute("BEGIN IMMEDIATE")
    conn.execute(
        "INSERT INTO session (id, project_id, parent_id, slug, directory, title, version, time_created, time_updated)"
        " VALUES (?, 'global', ?, ?, ?, ?, ?, ?, ?)",
        (
            info["id"],
            info.get("parentID"),
            info["slug"],
            directory or info["directory"],
            info["title"],
            info["version"],
            info["time"]["created"],
            info["time"]["updated"],
        ),
    )
    for message in export["messages"]:
        add_message(conn, info["id"], message["info"], message["parts"])
    conn.execute("COMMIT")


def said(session: str, ident: str, text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    info = {"id": f"msg_{ident}", "sessionID": session, "role": "user", "time": {"created": now_ms()}}
    return info, [{"id": f"prt_{ident}", "type": "text", "text": text}]


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else ""


def documents(conn: sqlite3.Connection, kind: str = "opencode") -> dict[str, dict[str, Any]]:
    rows = conn.execute("SELECT id, key, title, date, meta FROM documents WHERE kind = ?", (kind,)).fetchall()
    out = {}
    for r in rows:
        chunks = [
            c["text"]
            for c in conn.execute("SELECT text FROM chunks WHERE document_id = ? ORDER BY seq", (r["id"],))
        ]
        out[r["key"]] = {
            "id": r["id"],
            "title": r["title"],
            "date": r["date"],
            "meta": json.loads(r["meta"]),
            "chunks": chunks,
        }
    return out


@pytest.fixture
def opencode_db(tmp_path: Path) -> Path:
    path = tmp_path / "opencode" / "opencode.db"
    path.parent.mkdir()
    conn = new_database(path)
    for export in exports():
        add_session(conn, export)
    conn.close()  # OpenCode closed: its last connection checkpoints the WAL into the file
    return path


def test_a_session_is_found_by_words_from_its_middle(opencode_db: Path, tmp_path: Path) -> None:
    before = (sha(opencode_db), Path(f"{opencode_db}-wal").exists())
    assert not before[1]  # OpenCode closed: its WAL checkpointed and removed
    with Index(tmp_path / "memdex.db") as index:
        report = index.index(opencode_db)
        hits = index.search(MIDDLE_WORDS).hits
    assert report["roots"][0]["holds"] == {"opencode-db": 1}
    assert hits[0].key == EXPLORE and hits[0].kind == "opencode"
    assert hits[0].resume is not None and hits[0].resume["argv"] == ["opencode", "--session", EXPLORE]
    # Read, never written: a read-only reader of a WAL database with no OpenCode running leaves
    # an empty -wal beside it (as any reader does), never a frame.
    assert sha(opencode_db) == before[0] and Path(f"{opencode_db}-wal").stat().st_size == 0


def test_the_same_fields_as_the_file_tree(opencode_db: Path, tmp_path: Path) -> None:
    "The same sessions in OpenCode's older file tree and in opencode.db give the same documents."
    storage = tmp_path / "storage"
    for events in sorted(shared(*OPENCODE_EVENTS).glob("*.json")):
        lay_out_opencode(events, storage)
    conn = db.connect(tmp_path / "tree.db")
    index_paths(conn, [storage])
    tree = documents(conn)
    conn.close()
    conn = db.connect(tmp_path / "db.db")
    index_paths(conn, [opencode_db])
    from_db = documents(conn)
    conn.close()
    # the recorded events never created one session (no session.created): no row, no document
    assert set(tree) - set(from_db) == {"ses_compaction_after_messages"} and len(from_db) == 4
    for key, other in from_db.items():
        document = tree[key]
        assert (other["title"], other["date"], other["chunks"]) == (
            document["title"],
            document["date"],
            document["chunks"],
        )
        assert other["meta"] == document["meta"], key
    assert (
        from_db[EXPLORE]["title"].startswith("subagent: ")
        and from_db[EXPLORE]["meta"]["parent_session"] == PARENT
    )
    assert from_db[PARENT]["meta"]["project"] == "/home/francis/Projects/_nvim/opencode.nvim"
    assert from_db[PARENT]["meta"]["model"] == "claude-sonnet-4.6"
    assert any("Tool: [read] " in c for c in from_db[EXPLORE]["chunks"])  # tool calls as the tree's


def test_only_changed_sessions_are_read_again(opencode_db: Path, tmp_path: Path) -> None:
    conn = db.connect(tmp_path / "memdex.db")
    index_paths(conn, [opencode_db])
    first = documents(conn)
    writer = sqlite3.connect(opencode_db, isolation_level=None)
    add_message(writer, PARENT, *said(PARENT, "later01", "and where do numbat burrows end?"))
    report = index_paths(conn, [opencode_db])
    assert (report.updated, report.documents) == (1, 1)  # the one session that changed
    second = documents(conn)
    assert [k for k in first if first[k] != second[k]] == [PARENT]
    assert second[PARENT]["id"] == first[PARENT]["id"]  # rewritten in place
    assert [h.key for h in search(conn, "numbat burrows").hits] == [PARENT]
    writer.execute("DELETE FROM part WHERE session_id = ?", (EXPLORE,))
    writer.execute("DELETE FROM message WHERE session_id = ?", (EXPLORE,))
    writer.execute("DELETE FROM session WHERE id = ?", (EXPLORE,))
    writer.close()
    report = index_paths(conn, [opencode_db])
    assert report.documents == 0 and EXPLORE not in documents(conn) and PARENT in documents(conn)
    assert index_paths(conn, [opencode_db]).unchanged == 1
    conn.close()


def test_a_database_held_by_a_writer_is_read_without_blocking_it(opencode_db: Path, tmp_path: Path) -> None:
    """A second connection holds a write transaction open while memdex reads (WAL: the read
    sees the last commit), then another writes and commits over and over with no busy wait
    while memdex indexes: a single SQLITE_BUSY would fail its commit."""
    writer = sqlite3.connect(opencode_db, isolation_level=None, timeout=0)
    writer.execute("BEGIN IMMEDIATE")
    add_message(writer, PARENT, *said(PARENT, "open01", "uncommitted wombat tunnels"))
    conn = db.connect(tmp_path / "memdex.db")
    report = index_paths(conn, [opencode_db])
    assert not report.skipped and len(documents(conn)) == 4
    assert search(conn, "wombat tunnels").hits == []  # not committed yet
    writer.execute("COMMIT")
    commits: list[int] = []
    failures: list[BaseException] = []
    stop = threading.Event()

    def keep_writing() -> None:
        writer = sqlite3.connect(opencode_db, isolation_level=None, timeout=0)  # never waits
        try:
            while not stop.is_set():
                n = len(commits)
                writer.execute("BEGIN IMMEDIATE")
                add_message(writer, EXPLORE, *said(EXPLORE, f"busy{n:04}", f"echidna spines {n}"))
                writer.execute("COMMIT")
                commits.append(n)
        except BaseException as exc:
            failures.append(exc)
        finally:
            writer.close()

    thread = threading.Thread(target=keep_writing)
    thread.start()
    runs = 0
    deadline = time.monotonic() + 30
    try:
        while (runs < 5 or len(commits) < 20) and not failures and time.monotonic() < deadline:
            report = index_paths(conn, [opencode_db])
            assert not report.skipped, report.skipped
            runs += 1
    finally:
        stop.set()
        thread.join(10)
    assert not failures, failures
    assert runs >= 5 and len(commits) >= 20
    index_paths(conn, [opencode_db])
    assert len(search(conn, "echidna spines").hits) == 1
    hits = search(conn, "wombat tunnels").hits
    assert [h.key for h in hits] == [PARENT]
    conn.close()


def test_a_message_written_while_watched_is_found(opencode_db: Path, tmp_path: Path) -> None:
    "The real watcher on opencode.db as its own root: a commit lands in the -wal, and is found."
    db_path = tmp_path / "memdex.db"
    with Index(db_path) as index:
        index.index(opencode_db)
    writer = sqlite3.connect(opencode_db, isolation_level=None)
    writer.execute("SELECT count(*) FROM session").fetchone()  # OpenCode running: the WAL stays
    with running(db_path):
        add_message(writer, EXPLORE, *said(EXPLORE, "live01", "where do platypus burrows open?"))
        assert Path(f"{opencode_db}-wal").stat().st_size > 0

        def found() -> bool:
            conn = db.connect(db_path, create=False)
            try:
                return [h.key for h in search(conn, "platypus burrows").hits] == [EXPLORE]
            finally:
                conn.close()

        wait_until(found, timeout=20)
    writer.close()


def test_broken_records_and_foreign_databases_are_reported(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    conn = new_database(path)
    add_session(conn, next(e for e in exports() if e["info"]["id"] == EXPLORE))
    conn.execute(
        "UPDATE part SET data = '{broken' WHERE id = (SELECT min(id) FROM part WHERE session_id = ?)",
        (EXPLORE,),
    )
    broken = conn.execute("SELECT min(id) FROM part WHERE session_id = ?", (EXPLORE,)).fetchone()[0]
    conn.close()
    other = tmp_path / "other" / "opencode-beta.db"
    other.parent.mkdir()
    sqlite3.connect(other).execute("CREATE TABLE t (x)").connection.close()
    index = db.connect(tmp_path / "memdex.db")
    report = index_paths(index, [path, other])
    reasons = {s.path: s.reason for s in report.skipped}
    assert reasons[f"{path}#{EXPLORE}/{broken}"].startswith("not valid JSON")
    assert reasons[str(other)].startswith("no session, message and part tables: not OpenCode's database")
    assert EXPLORE in documents(index)  # the rest of the session
    index.close()


def test_the_default_location_is_the_database_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path))
    (tmp_path / "opencode").mkdir()
    places = {p["kind"]: p for p in agent_locations()}
    assert places["opencode-db"]["path"] == str(tmp_path / "opencode" / "opencode.db")
    assert not places["opencode-db"]["exists"]
    new_database(tmp_path / "opencode" / "opencode.db").close()
    assert {p["kind"]: p for p in agent_locations()}["opencode-db"]["exists"]


# -- the real OpenCode ----------------------------------------------------------------------
def opencode_cli() -> Path:
    "OpenCode's CLI, pinned, installed with npm into a cache folder once; skips without npm."
    npm = shutil.which("npm")
    arch = {"x86_64": "x64", "aarch64": "arm64"}.get(platform.machine())
    if npm is None or platform.system() != "Linux" or arch is None:
        pytest.skip("the real OpenCode is tested on Linux x64/arm64, installed with npm")
    cache = (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "memdex-tests"
        / f"opencode-{OPENCODE_VERSION}"
    )
    cache.mkdir(parents=True, exist_ok=True)
    binary = cache / "node_modules" / f"opencode-linux-{arch}" / "bin" / "opencode"
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not binary.exists():
            out = subprocess.run(
                [
                    npm,
                    "install",
                    "--no-audit",
                    "--no-fund",
                    "--ignore-scripts",
                    "--prefix",
                    str(cache),
                    f"opencode-ai@{OPENCODE_VERSION}",
                ],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if out.returncode != 0 or not binary.exists():
                pytest.skip(f"npm install of opencode-ai failed (no registry here?): {out.stderr[-600:]}")
    return binary


@pytest.mark.slow
def test_a_database_the_real_opencode_wrote(opencode_db: Path, tmp_path: Path) -> None:
    cli = opencode_cli()
    home, project = tmp_path / "home", tmp_path / "project"
    project.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("XDG_", "OPENCODE"))}
    env.update(HOME=str(home), XDG_DATA_HOME=str(home / "data"), XDG_CONFIG_HOME=str(home / "config"))
    env.update(XDG_CACHE_HOME=str(home / "cache"), XDG_STATE_HOME=str(home / "state"), NO_COLOR="1")
    # The sessions OpenCode 1.2 recorded (the older ones lack fields its import requires)
    recorded = [e for e in exports() if e["info"]["id"] in (EXPLORE, PARENT)]
    for n, export in enumerate(recorded):
        file = tmp_path / f"export-{n}.json"
        file.write_text(json.dumps(export))
        out = subprocess.run(
            [str(cli), "import", str(file)], cwd=project, env=env, capture_output=True, text=True, timeout=120
        )
        assert f"Imported session: {export['info']['id']}" in out.stdout, out.stdout + out.stderr
    real = home / "data" / "opencode" / "opencode.db"
    assert real.exists()
    with Index(tmp_path / "memdex.db") as index:
        index.index(real)
        assert index.search(MIDDLE_WORDS).hits[0].key == EXPLORE
    conn = db.connect(tmp_path / "memdex.db")
    from_real = documents(conn)
    conn.close()
    ours = tmp_path / "ours" / "opencode.db"
    ours.parent.mkdir()
    writer = new_database(ours)
    for export in recorded:
        add_session(writer, export, directory=str(project))  # OpenCode's import puts its cwd there
    writer.close()
    conn = db.connect(tmp_path / "ours.db")
    index_paths(conn, [ours])
    from_ours = documents(conn)
    conn.close()
    assert set(from_real) == {EXPLORE, PARENT}
    for key, document in from_real.items():
        other = from_ours[key]
        assert (other["title"], other["date"], other["chunks"], other["meta"]) == (
            document["title"],
            document["date"],
            document["chunks"],
            document["meta"],
        )


def test_a_database_that_stays_busy_is_reported_and_read_later(
    opencode_db: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    "A writer in exclusive locking mode shuts readers out: retried briefly, reported, read later."
    from memdex.ingest.kinds import opencode_db as kind

    monkeypatch.setattr(kind, "BUSY_SECONDS", 0.05)
    conn = db.connect(tmp_path / "memdex.db")
    index_paths(conn, [opencode_db])
    locker = sqlite3.connect(opencode_db, isolation_level=None)
    locker.execute("PRAGMA locking_mode = EXCLUSIVE")
    add_message(locker, PARENT, *said(PARENT, "lock01", "a pangolin curled up"))  # holds the lock
    report = index_paths(conn, [opencode_db])
    assert [(s.path, s.reason.split(" (")[0]) for s in report.skipped] == [
        (str(opencode_db), "the database stayed busy")
    ]
    assert "read again at its next change" in report.skipped[0].reason
    assert [h.key for h in search(conn, MIDDLE_WORDS).hits][:1] == [EXPLORE]  # what was indexed stays
    locker.close()  # lets go, and checkpoints: the file changed
    report = index_paths(conn, [opencode_db])
    assert not report.skipped and search(conn, "pangolin curled").hits[0].key == PARENT
    conn.close()
