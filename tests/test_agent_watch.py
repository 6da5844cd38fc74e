"""Live agent histories with the real watcher running (issue 28): a record appended to a Gemini
CLI session, a Copilot CLI event log or an Aider history is found, read on from where the
index stopped, not read whole."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memdex.ingest.kinds.aider import local_stamp
from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db
from tests.conftest import shared

from .test_service import running
from .test_watcher import wait_until

GEMINI = (
    "chats",
    "gemini",
    "jazzyalex-agent-sessions",
    "Resources",
    "Fixtures",
    "stage0",
    "agents",
    "gemini",
)
COPILOT = ("chats", "copilot-cli", "qiaolei81-copilot-session-viewer", "__tests__", "fixtures", "sessions")
AIDER = ("chats", "aider", "AFI-Protocol-afi-core", ".aider.chat.history.md")


def keys(db_path: Path, query: str) -> list[str]:
    conn = db.connect(db_path, create=False)
    try:
        return [h.key for h in search(conn, query).hits]
    finally:
        conn.close()


def whole_sizes(db_path: Path) -> dict[str, int]:
    conn = db.connect(db_path, create=False)
    try:
        rows = conn.execute("SELECT f.path, t.whole_size FROM file_tails t JOIN files f ON f.id = t.file_id")
        return {r["path"]: r["whole_size"] for r in rows}
    finally:
        conn.close()


@pytest.mark.slow
def test_records_appended_to_live_agent_logs_are_found(db_path: Path, tmp_path: Path) -> None:
    root = tmp_path / "agents"
    gemini = root / "gemini" / "chats" / "session-2026-04-29T21-39-gemini_s.jsonl"
    gemini.parent.mkdir(parents=True)
    shutil.copy(shared(*GEMINI, "jsonl_v040.jsonl"), gemini)
    shutil.copytree(shared(*COPILOT, "copilot-cli"), root / "copilot")
    copilot = root / "copilot" / "session-demo" / "events.jsonl"
    (root / "repo").mkdir()
    aider = root / "repo" / ".aider.chat.history.md"
    shutil.copy(shared(*AIDER), aider)
    conn = db.connect(db_path)
    index_paths(conn, [root])
    conn.close()
    read_whole = whole_sizes(db_path)
    appended = [
        (
            gemini,
            {"id": "g-u-2", "timestamp": "2026-04-29T21:40:00Z", "type": "user", "content": "wombat burrows"},
        ),
        (copilot, {"type": "user.message", "data": {"content": "how deep are numbat burrows"}, "id": "x"}),
    ]
    with running(db_path):
        for path, record in appended:
            with path.open("a") as f:
                f.write(json.dumps(record) + "\n")
        with aider.open("a") as f:
            f.write("#### and the quokka burrows?  \n\nQuokkas shelter under dense shrubs, not burrows.\n\n")
        wait_until(lambda: keys(db_path, "wombat") == ["gemini_stage0_jsonl"])
        wait_until(lambda: keys(db_path, "numbat") == ["030f200c-c26f-4ef0-9099-6d1156c83631"])
        wait_until(lambda: keys(db_path, "quokka shrubs") == [local_stamp("2025-08-04 13:59:12")])  # its last
    assert whole_sizes(db_path) == read_whole  # each was read on, not read whole again
