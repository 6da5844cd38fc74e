"""MEMDEX_RAISE_ERRORS at each place that survives bugs: ingest, the MCP tools, the watcher.

Without it a bug is recorded and the long-running thing carries on; with it the bug
propagates, so a crash can never hide inside a test (issue 13). The bugs here are real: a
kind registered through the registry whose code raises, and an index row no parser wrote.
"""

from __future__ import annotations

import sqlite3
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from memdex.errors import raise_errors
from memdex.ingest import sources
from memdex.ingest.base import SourceFile
from memdex.ingest.kinds.note import NoteKind
from memdex.ingest.pipeline import index_paths
from memdex.models import ParsedFile
from memdex.store import db
from memdex.store.lock import holder
from memdex.watch.service import WatchService, read_state

from .test_service import titles
from .test_watcher import wait_until


@pytest.mark.parametrize(
    ("value", "raises"), [(None, False), ("", False), ("0", False), ("1", True), ("yes", True)]
)
def test_the_variable_is_read_at_each_call(
    monkeypatch: pytest.MonkeyPatch, value: str | None, raises: bool
) -> None:
    if value is None:
        monkeypatch.delenv("MEMDEX_RAISE_ERRORS")
    else:
        monkeypatch.setenv("MEMDEX_RAISE_ERRORS", value)
    assert raise_errors() is raises


# -- ingest -----------------------------------------------------------------------------------
class BuggyParser(NoteKind):
    "Reads *.boom files, with a bug in its parser."

    name = "buggy-parser"

    def claims(self, rel_path: str) -> bool:
        return rel_path.endswith(".boom")

    def accepts(self, rel_path: str) -> bool:
        return self.claims(rel_path)

    def parse(self, source: SourceFile) -> ParsedFile:
        raise ZeroDivisionError(f"a parser bug reading {source.rel_path}")


class BuggySniff(BuggyParser):
    "Its bug is in ``sniff``, which the pipeline does not guard: it reaches the watcher."

    name = "buggy-sniff"

    def sniff(self, data: bytes) -> bool:
        raise ZeroDivisionError("a sniff bug")


@pytest.fixture
def boom_root(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "first.md").write_text("# First\n\nAbout herons.\n")
    return root


def test_a_parser_bug_propagates_from_index_paths(
    conn: sqlite3.Connection, boom_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sources(), BuggyParser.name, BuggyParser())
    (boom_root / "x.boom").write_text("boom")
    with pytest.raises(ZeroDivisionError, match=r"a parser bug reading x\.boom"):
        index_paths(conn, [boom_root])
    assert not conn.in_transaction


def test_without_the_variable_a_parser_bug_is_recorded_and_skipped(
    conn: sqlite3.Connection, boom_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sources(), BuggyParser.name, BuggyParser())
    monkeypatch.setenv("MEMDEX_RAISE_ERRORS", "0")
    (boom_root / "x.boom").write_text("boom")
    report = index_paths(conn, [boom_root])
    assert report.added == 1
    assert [(Path(s.path).name, s.reason) for s in report.skipped] == [
        (
            "x.boom",
            "unexpected ZeroDivisionError: a parser bug reading x.boom (a memdex bug: please report it)",
        )
    ]


# -- the MCP tool dispatcher, through a real stdio client -----------------------------------------
@pytest.fixture
def broken_conversation(sample: sqlite3.Connection, db_path: Path) -> int:
    "A conversation whose chunk metadata is not JSON, as no parser writes it: reading it is a bug."
    doc_id = int(sample.execute("SELECT id FROM documents WHERE kind = 'chatgpt' ORDER BY id").fetchone()[0])
    sample.execute("UPDATE chunks SET meta = '{not json' WHERE document_id = ?", (doc_id,))
    sample.commit()
    return doc_id


def get_document_over_stdio(db_path: Path, doc_id: int, raise_env: str, errlog: Path) -> tuple[bool, str]:
    "(is_error, text) of one get_document call, the server's stderr written to ``errlog``."
    from mcp import ClientSession, StdioServerParameters, stdio_client
    from mcp.types import TextContent

    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memdex", "--db", str(db_path), "mcp"],
        env={"MEMDEX_RAISE_ERRORS": raise_env},
    )

    async def go() -> Any:
        with errlog.open("w") as err:
            async with stdio_client(params, errlog=err) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    return await session.call_tool("get_document", {"id": doc_id})

    result = anyio.run(go)
    return bool(result.is_error), "".join(c.text for c in result.content if isinstance(c, TextContent))


@pytest.mark.slow
def test_mcp_a_tool_bug_is_an_internal_error_without_the_variable(
    db_path: Path, broken_conversation: int, tmp_path: Path
) -> None:
    import json

    is_error, text = get_document_over_stdio(db_path, broken_conversation, "0", tmp_path / "err.txt")
    assert is_error
    error = json.loads(text)["error"]
    assert error["type"] == "internal" and error["message"].startswith("JSONDecodeError: ")
    assert "tool failed" in (tmp_path / "err.txt").read_text()  # logged, with its traceback


@pytest.mark.slow
def test_mcp_a_tool_bug_propagates_with_the_variable(
    db_path: Path, broken_conversation: int, tmp_path: Path
) -> None:
    is_error, text = get_document_over_stdio(db_path, broken_conversation, "1", tmp_path / "err.txt")
    # Not memdex's documented error shape: the bug left the dispatcher, and the SDK reports it
    # as a crash, withholding the text from the client and logging the traceback.
    assert (is_error, text) == (True, "Error executing tool get_document")
    stderr = (tmp_path / "err.txt").read_text()
    assert "raised an unexpected exception" in stderr and "json.decoder.JSONDecodeError" in stderr
    assert "tool failed" not in stderr  # memdex's own handler did not catch it


# -- the watcher service loop -------------------------------------------------------------------
@contextmanager
def service_thread(db_path: Path) -> Iterator[tuple[WatchService, threading.Thread, list[BaseException]]]:
    "A watch service on a thread; what ``run()`` raised is collected, not lost with the thread."
    service = WatchService(db_path, [], debounce=0.05)
    raised: list[BaseException] = []

    def target() -> None:
        try:
            service.run()
        except BaseException as exc:
            raised.append(exc)

    thread = threading.Thread(target=target, name="memdex-watch")
    thread.start()
    try:
        assert service.wait_ready(20), "the watcher did not finish its start-up catch-up"
        yield service, thread, raised
    finally:
        service.stop()
        thread.join(20)
        assert not thread.is_alive()


@pytest.fixture
def watched_boom(db_path: Path, boom_root: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    conn = db.connect(db_path)
    index_paths(conn, [boom_root])
    conn.close()
    monkeypatch.setitem(sources(), BuggySniff.name, BuggySniff())
    return boom_root


def test_watcher_a_bug_stops_the_service_with_the_variable(db_path: Path, watched_boom: Path) -> None:
    with service_thread(db_path) as (_, thread, raised):
        (watched_boom / "x.boom").write_text("boom")
        thread.join(20)  # it stops on its own: nobody called stop()
        assert not thread.is_alive()
    with pytest.raises(ZeroDivisionError, match="a sniff bug"):
        raise raised[0]
    state = read_state(db_path)
    assert state is not None and state["stopped_at"]
    assert "unexpected ZeroDivisionError: a sniff bug; stopping" in state["errors"][-1]["message"]
    assert holder(db_path) is None  # the writer lock was released on the way out


@pytest.mark.slow
def test_watcher_survives_a_bug_without_the_variable(
    db_path: Path, watched_boom: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("MEMDEX_RAISE_ERRORS", "0")
    with service_thread(db_path) as (service, thread, raised):
        (watched_boom / "x.boom").write_text("boom")
        wait_until(
            lambda: any("unexpected ZeroDivisionError" in e["message"] for e in service.state["errors"])
        )
        assert "will catch up" in service.state["errors"][-1]["message"]
        (watched_boom / "x.boom").unlink()
        (watched_boom / "later.md").write_text("# Later\n\nAbout avocets.\n")
        wait_until(lambda: titles(db_path, "avocets") == ["Later"])
        assert thread.is_alive()
    assert raised == []
