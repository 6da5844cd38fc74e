"""Keeping what the agent deleted (issue 28): a session log whose file goes stays searchable,
marked 'source deleted'; a moved file is no deletion; notes still go unless a root says so."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memdex.doors.cli import cli
from memdex.ingest.pipeline import index_changes, index_paths
from memdex.query.search import search
from memdex.store import db

from .conftest import shared
from .ingest.test_pipeline import fts_integrity
from .ingest.test_sessions import claude_line, conversation
from .test_service import running
from .test_watcher import wait_until

# A real Claude Code session (daaain/claude-code-log's test data, MIT): a question about
# markdownlint's MD034 rule in MDX files, answered.
SESSION = "5ed31c36-bca8-40fd-8d24-f1a1f0af7901.jsonl"
PROJECT = "-Users-dain-workspace-danieldemmel-me-next"
QUERY = "markdownlint bare urls"


def run(db_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db_path), *args], catch_exceptions=False)


def as_json(db_path: Path, *args: str) -> dict:  # type: ignore[type-arg]
    result = run(db_path, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def projects(tmp_path: Path) -> Path:
    "~/.claude/projects with one real session in its project folder (a writable copy)."
    folder = tmp_path / "projects" / PROJECT
    folder.mkdir(parents=True)
    shutil.copy(shared("chats", "claude-code", "daaain-claude-code-log", PROJECT, SESSION), folder / SESSION)
    return tmp_path / "projects"


def deleted_at(conn: sqlite3.Connection) -> dict[str, str | None]:
    return {r["path"]: r["deleted_at"] for r in conn.execute("SELECT path, deleted_at FROM files")}


def test_a_deleted_session_stays_searchable_marked_until_purged(db_path: Path, projects: Path) -> None:
    session = projects / PROJECT / SESSION
    kept = projects.parent / "elsewhere.jsonl"  # the same bytes, put back later
    shutil.copy2(session, kept)
    assert run(db_path, "index", str(projects)).exit_code == 0
    session.unlink()  # Claude Code's cleanup after cleanupPeriodDays
    report = as_json(db_path, "index")
    assert (report["kept_deleted"], report["removed"]) == (1, 0)

    found = as_json(db_path, "search", QUERY)["results"]
    assert [r["path"] for r in found] == [str(session)]
    noticed = found[0]["source_deleted"]
    assert noticed and noticed[:2] == "20"
    conn = db.connect(db_path, create=False)  # the Python API (and Datasette's plugin) too
    try:
        assert [h.source_deleted for h in search(conn, QUERY).hits] == [noticed]
    finally:
        conn.close()
    text = run(db_path, "search", QUERY).stdout
    assert f"source deleted {noticed[:10]}; kept in the index" in text
    shown = run(db_path, "show", str(found[0]["id"]))
    assert shown.exit_code == 0
    assert shown.stderr.startswith(f"-- source deleted {noticed[:10]}: this is the indexed copy")
    assert "MD034" in shown.stdout and "source deleted" not in shown.stdout
    assert as_json(db_path, "show", str(found[0]["id"]))["source_deleted"] == noticed
    status = as_json(db_path, "status")
    assert status["counts"]["source_deleted"] == 1
    assert [(r["keep_deleted"], r["source_deleted"]) for r in status["roots"]] == [(None, 1)]
    assert "Source deleted: 1 document kept in the index" in run(db_path, "status").stdout

    # Indexed again, and by a watcher's catch-up: still kept, noticed on the same date.
    again = as_json(db_path, "index", str(projects))
    assert (again["kept_deleted"], again["removed"]) == (0, 0)
    with running(db_path):
        pass
    conn = db.connect(db_path)
    assert deleted_at(conn) == {str(session): noticed}
    assert [h.title for h in search(conn, QUERY).hits] == [found[0]["title"]]

    # Back at the same path, with the same stat: indexed as any file, and the mark goes.
    shutil.copy2(kept, session)
    assert as_json(db_path, "index")["kept_deleted"] == 0
    assert deleted_at(conn) == {str(session): None}
    assert as_json(db_path, "search", QUERY)["results"][0]["source_deleted"] is None

    session.unlink()
    assert as_json(db_path, "index")["kept_deleted"] == 1
    purged = as_json(db_path, "roots", "purge-deleted", str(projects), "--yes")
    assert (purged["files"], purged["documents"], purged["deleted"][0]["path"]) == (1, 1, str(session))
    assert as_json(db_path, "search", QUERY)["results"] == []
    assert as_json(db_path, "status")["counts"]["source_deleted"] == 0
    assert conn.execute("SELECT count(*) FROM files").fetchone()[0] == 0
    fts_integrity(conn)
    conn.close()


def test_a_moved_session_is_not_a_deletion(conn: sqlite3.Connection, projects: Path) -> None:
    "Moved in one run (a folder renamed), or as a watcher's batch names both ends."
    index_paths(conn, [projects])
    (projects / PROJECT).rename(projects / "-renamed")
    report = index_paths(conn, [projects])
    assert (report.added, report.removed, report.kept_deleted) == (1, 1, 0)
    assert list(deleted_at(conn).values()) == [None]

    # Both ends in one watcher batch; the old path sorts first, and is still no deletion.
    old, new = projects / "-renamed" / SESSION, projects / "-z" / SESSION
    new.parent.mkdir()
    old.rename(new)
    report = index_changes(conn, [old, new])
    assert (report.added, report.removed, report.kept_deleted) == (1, 1, 0)
    assert [h.path for h in search(conn, QUERY).hits] == [str(new)]


def test_a_session_read_on_as_it_grew_and_then_moved_is_not_a_deletion(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "Its stored hash is chained from the appended bytes, not the file's: its stat and name tell."
    log = tmp_path / "projects" / "-work-proj" / "s-1.jsonl"
    log.parent.mkdir(parents=True)
    log.write_text("\n".join(conversation(0, 10, None)) + "\n")
    index_paths(conn, [tmp_path / "projects"])
    with log.open("a") as f:
        f.write(claude_line(10, "user", "and the albatross", "u9") + "\n")
    assert index_paths(conn, [tmp_path / "projects"]).updated == 1
    log.rename(tmp_path / "projects" / "s-1.jsonl")
    report = index_paths(conn, [tmp_path / "projects"])
    assert (report.removed, report.kept_deleted) == (1, 0)


def test_notes_go_unless_their_root_keeps_deleted_files(
    db_path: Path, tmp_path: Path, projects: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("heron", "egret", "gull"):
        (notes / f"{name}.md").write_text(f"# {name}\n\nAbout the {name}.\n")
    assert run(db_path, "index", str(notes)).exit_code == 0
    (notes / "heron.md").unlink()
    assert as_json(db_path, "index")["removed"] == 1  # as before issue 28
    assert as_json(db_path, "search", "heron")["results"] == []

    assert run(db_path, "index", "--keep-deleted", str(notes)).exit_code == 0
    (notes / "egret.md").unlink()
    assert as_json(db_path, "index", str(notes))["kept_deleted"] == 1  # remembered without the flag
    egret = as_json(db_path, "search", "egret")["results"]
    assert [(r["title"], bool(r["source_deleted"])) for r in egret] == [("egret", True)]
    shown = run(db_path, "show", str(notes / "egret.md"))
    assert "About the egret." in shown.stdout and "source deleted" in shown.stderr

    # A session root told not to keep them drops a deleted session.
    assert run(db_path, "index", "--no-keep-deleted", str(projects)).exit_code == 0
    (projects / PROJECT / SESSION).unlink()
    assert as_json(db_path, "index", str(projects))["removed"] == 1
    roots = {r["path"]: (r["keep_deleted"], r["source_deleted"]) for r in as_json(db_path, "roots")}
    assert roots == {str(notes): (True, 1), str(projects): (False, 0)}
    assert "egret" not in run(db_path, "roots", "purge-deleted", str(projects)).stdout

    usage = run(db_path, "index", "--keep-deleted")
    assert usage.exit_code == 2 and "--keep-deleted is remembered per root" in usage.output


@pytest.mark.slow
def test_the_watcher_keeps_a_deleted_session_and_not_a_moved_one(db_path: Path, projects: Path) -> None:
    "Real watchdog events; then a restart, whose catch-up keeps the mark."
    from .test_mcp import over_stdio

    session = projects / PROJECT / SESSION
    other = projects / "-other" / "s-2.jsonl"
    other.parent.mkdir()
    other.write_text("\n".join(conversation(0, 6, None)) + "\n")
    conn = db.connect(db_path)
    index_paths(conn, [projects])
    with running(db_path):
        session.unlink()
        moved = projects / "-other-renamed"
        other.parent.rename(moved)
        wait_until(lambda: str(moved / "s-2.jsonl") in deleted_at(conn))
        wait_until(lambda: deleted_at(conn).get(str(session)) is not None)
    assert deleted_at(conn)[str(moved / "s-2.jsonl")] is None and str(other) not in deleted_at(conn)
    noticed = deleted_at(conn)[str(session)]
    (moved / "s-2.jsonl").unlink()  # while the watcher is off
    with running(db_path) as service:
        assert service.state["catch_up"]["kept_deleted"] == 1
        assert deleted_at(conn)[str(session)] == noticed
        assert deleted_at(conn)[str(moved / "s-2.jsonl")] is not None
    conn.close()

    calls = [("search_knowledge_base", {"query": QUERY, "mode": "search"})]
    found = over_stdio(db_path, calls)["calls"][0]["data"]["results"]
    assert [(r["path"], r["source_deleted"]) for r in found] == [(str(session), noticed)]
