"""Gemini CLI, GitHub Copilot CLI, OpenCode and Aider (issue 28): real files from ../shared
found by what they hold, titled, searchable by what the assistant said; fixtures of our own
for what the samples lack (a rewound Gemini JSONL, logs.json and checkpoints, OpenCode's
storage tree written from its real server events, broken records), and reading on as they grow.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memdex.ingest.kinds.aider import local_stamp
from memdex.ingest.pipeline import index_paths
from memdex.query.request import SearchRequest
from memdex.query.search import search
from memdex.store import db
from tests.conftest import shared

GEMINI = ("chats", "gemini")
COPILOT = ("chats", "copilot-cli")
AIDER_AFI = ("chats", "aider", "AFI-Protocol-afi-core")
OPENCODE_EVENTS = ("chats", "opencode", "sudo-tee-opencode.nvim", "tests", "data")
OPENCODE_TREES = (
    "chats",
    "opencode",
    "jazzyalex-agent-sessions",
    "Resources",
    "Fixtures",
    "stage0",
    "agents",
)


def lay_out_opencode(events: Path, storage: Path) -> None:
    """OpenCode's server events (JSON arrays recorded by opencode.nvim) as the files OpenCode
    before 1.2 kept: the last version of each session, message and part object, at its path
    (session/<project>/<id>.json, message/<session>/<id>.json, part/<message>/<id>.json)."""
    objects: dict[Path, dict[str, Any]] = {}
    for event in json.loads(events.read_text("utf-8")):
        props = event.get("properties", {})
        if event["type"] in ("session.created", "session.updated"):
            info = props["info"]
            objects[storage / "session" / info.get("projectID", "global") / f"{info['id']}.json"] = info
        elif event["type"] == "message.updated":
            info = props["info"]
            objects[storage / "message" / info["sessionID"] / f"{info['id']}.json"] = info
        elif event["type"] == "message.part.updated":
            part = props["part"]
            objects[storage / "part" / part["messageID"] / f"{part['id']}.json"] = part
    for path, value in objects.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=2))


@pytest.fixture(scope="module")
def agents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[sqlite3.Connection]:
    "One index of every new kind's real files (OpenCode's laid out from its real events)."
    base = tmp_path_factory.mktemp("agents")
    storage = base / "opencode" / "storage"
    for events in sorted(shared(*OPENCODE_EVENTS).glob("*.json")):
        lay_out_opencode(events, storage)
    conn = db.connect(base / "agents.db")
    roots = [shared(*GEMINI), shared(*COPILOT), shared(*AIDER_AFI), storage, shared(*OPENCODE_TREES)]
    report = index_paths(conn, roots)
    assert [s.reason for s in report.skipped] == ["activity time 'not a time' is not a date"]  # Takeout's
    yield conn
    conn.close()


def kinds_of_files(conn: sqlite3.Connection) -> dict[str, str]:
    return {r["path"].split("/chats/")[-1]: r["kind"] for r in conn.execute("SELECT path, kind FROM files")}


def test_each_file_is_recognised_by_what_it_holds(agents: sqlite3.Connection) -> None:
    files = kinds_of_files(agents)
    for path, kind in files.items():
        if path.startswith("gemini/chatlore"):
            assert kind == "gemini", path  # the Takeout export is still the gemini kind's
        elif path.startswith("gemini/"):
            assert kind == "gemini-cli", path
        elif path.startswith("copilot-cli/"):
            assert kind == "copilot-cli", path
        elif path.startswith("aider/"):
            assert kind == "aider", path
        else:
            assert kind == "opencode" and "/message/" in path, path  # a session's first message
    assert sum(k == "gemini-cli" for k in files.values()) == 4
    assert sum(k == "copilot-cli" for k in files.values()) == 4
    assert sum(k == "opencode" for k in files.values()) == 8


def documents(conn: sqlite3.Connection, kind: str) -> dict[str, dict[str, Any]]:
    rows = conn.execute("SELECT key, title, meta, date FROM documents WHERE kind = ?", (kind,))
    return {r["key"]: {**json.loads(r["meta"]), "title": r["title"], "date": r["date"]} for r in rows}


def test_sessions_are_titled_with_their_project_and_model(agents: sqlite3.Connection) -> None:
    gemini = documents(agents, "gemini-cli")
    assert gemini["8016034b-8665-42c9-bb72-6486cf8a8162"]["title"] == "run notepad as admin"
    assert gemini["17b4d5e9-51f4-499e-bfcc-6b2a8ddffe6f"]["title"].startswith(
        "Fix UI, add blocklist"
    )  # summary
    assert gemini["17b4d5e9-51f4-499e-bfcc-6b2a8ddffe6f"]["model"] == "gemini-3-pro-preview"
    assert gemini["gemini_stage0_jsonl"]["title"] == "Say hello and list files."
    copilot = documents(agents, "copilot-cli")
    demo = copilot["030f200c-c26f-4ef0-9099-6d1156c83631"]
    assert demo["title"].startswith("Read .copilot/skills/demo-greeter/SKILL.md")
    assert (demo["project"], demo["model"]) == (
        "/Users/testuser/workspace/demo-project",
        "claude-opus-4.7-1m-internal",
    )
    assert copilot["aaaabbbb-1111-2222-3333-ccccddddeeee"]["branch"] == "main"
    assert copilot["06141331-92e8-4e9e-8bbb-9b7a729eb01a"]["message_count"] > 100  # the older JSON
    opencode = documents(agents, "opencode")
    child = opencode["ses_341f3e676ffez6WUF6zpok7dUZ"]
    assert (
        child["title"].startswith("subagent: ")
        and child["parent_session"] == "ses_341f480cfffekQwFX2LabeJFAU"
    )
    assert opencode["ses_341f480cfffekQwFX2LabeJFAU"]["title"] == "Task tool rendering location search"
    assert (
        opencode["ses_341f480cfffekQwFX2LabeJFAU"]["project"] == "/home/francis/Projects/_nvim/opencode.nvim"
    )
    assert opencode["s_stage0_drift"]["title"] == "OpenCode Drift"  # the older tree, parts in part/
    aider = documents(agents, "aider")
    assert len(aider) == 8 and aider["2025-07-15T14:53:34Z"]["title"] == "chmod +x ~/AFI_Modular_Repos/*.sh"
    assert (
        aider["2025-07-15T14:53:34Z"]["model"] == "gpt-4o"
        and aider["2025-07-15T14:53:34Z"]["version"] == "v0.85.1"
    )
    assert aider["2025-07-15T14:53:34Z"]["project"].endswith("AFI-Protocol-afi-core")
    for docs in (gemini, copilot, opencode, aider):
        assert not [d["title"] for d in docs.values() if d["title"].startswith("untitled")]


def assistant_messages(conn: sqlite3.Connection, kind: str) -> Iterator[tuple[str, str]]:
    "(document key, text) of every message the index holds as the assistant's."
    rows = conn.execute(
        "SELECT d.key, c.text, c.meta FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.kind = ?",
        (kind,),
    )
    for row in rows:
        starts = json.loads(row["meta"])["messages"]
        for n, (_, offset, role, _) in enumerate(starts):
            if role == "assistant":
                end = starts[n + 1][1] if n + 1 < len(starts) else len(row["text"])
                yield row["key"], row["text"][offset:end].removeprefix("Assistant:").strip()


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["gemini-cli", "copilot-cli", "opencode", "aider"])
def test_what_the_assistant_said_finds_its_session_in_the_top_3(
    agents: sqlite3.Connection, kind: str
) -> None:
    """Issue 28's measure: eight words from the middle of an assistant message of eight or
    more, for 30 messages spread over each kind's (all 218 of Gemini CLI's take 11 s here)."""
    said = [(key, text) for key, text in assistant_messages(agents, kind) if len(text.split()) >= 8]
    total = top3 = 0
    for key, text in said[:: max(1, len(said) // 30)]:
        words = text.split()
        query = " ".join(words[len(words) // 2 - 4 : len(words) // 2 + 4])
        keys = [h.key for h in search(agents, SearchRequest(query, limit=3)).hits]
        total += 1
        top3 += key in keys
    assert total >= min(len(said), 30) >= 8 and top3 == total, (top3, total)


def test_tools_and_thoughts_are_trimmed_and_unsaid(agents: sqlite3.Connection) -> None:
    body = "\n".join(
        r[0]
        for r in agents.execute(
            "SELECT c.text FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE d.key = '17b4d5e9-51f4-499e-bfcc-6b2a8ddffe6f' ORDER BY c.seq"
        )
    )
    assert "Tool: [" in body and "Tool: [result]" in body and "Thinking: " in body
    assert "bytes trimmed]" in body  # tool output over sessions.TOOL_BYTES
    aider = "\n".join(
        r[0]
        for r in agents.execute(
            "SELECT c.text FROM chunks c JOIN documents d ON d.id = c.document_id "
            "WHERE d.key = '2025-07-15T14:53:34Z'"
        )
    )
    assert "Tool: [edit] ```bash\n<<<<<<< SEARCH" in aider  # an edit block is no reply
    assert "Tool: Tokens: 3.2k sent" in aider and "Assistant: To make the shell script" in aider


# -- fixtures for what the samples lack --------------------------------------------------------
def line(record: dict[str, Any]) -> str:
    return json.dumps(record) + "\n"


def gemini_message(ident: str, kind: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"id": ident, "timestamp": "2026-05-01T10:00:00Z", "type": kind, "content": text, **extra}


def test_gemini_jsonl_updates_replace_and_rewind(conn: sqlite3.Connection, tmp_path: Path) -> None:
    "Newer Gemini CLI's JSONL: a message written again replaces the first; a rewind drops the tail."
    project = tmp_path / ".gemini" / "tmp" / "my-app"
    (project / "chats").mkdir(parents=True)
    (project / ".project_root").write_text("/home/me/my-app\n")
    log = project / "chats" / "session-2026-05-01T10-00-aaaa1111.jsonl"
    call = {"id": "c1", "name": "run_shell_command", "args": {"command": "ls"}, "status": "executing"}
    done = {**call, "status": "success", "result": [{"functionResponse": {"response": {"output": "a.txt"}}}]}
    log.write_text(
        line({"sessionId": "aaaa1111-2222", "projectHash": "x", "startTime": "2026-05-01T10:00:00Z"})
        + line(gemini_message("u1", "user", "what files are in the tangerine folder"))
        + line(gemini_message("g1", "gemini", "", toolCalls=[call], model="gemini-2.5-pro"))
        + line(gemini_message("g1", "gemini", "", toolCalls=[done], model="gemini-2.5-pro"))
        + line(gemini_message("g2", "gemini", "There is one file, a.txt, in the tangerine folder."))
        + line(gemini_message("u2", "user", "now delete the apricot branch"))
        + line({"$rewindTo": "u2"})
        + line({"$set": {"summary": "Tangerine folder listing", "lastUpdated": "2026-05-01T10:05:00Z"}})
    )
    index_paths(conn, [tmp_path / ".gemini"])
    doc = conn.execute("SELECT * FROM documents").fetchone()
    meta = json.loads(doc["meta"])
    assert (doc["key"], doc["title"], meta["project"], meta["session"]) == (
        "aaaa1111-2222",
        "Tangerine folder listing",
        "/home/me/my-app",
        "aaaa1111-2222",
    )
    body = "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks ORDER BY seq"))
    assert body.count("Tool: [run_shell_command] ls") == 1 and "Tool: [result] a.txt" in body
    assert "apricot" not in body  # rewound
    # the last message written again (its result arriving) is read on, not read whole
    tail = conn.execute("SELECT whole_size FROM file_tails").fetchone()[0]
    with log.open("a") as f:
        f.write(line(gemini_message("u3", "user", "and the kumquat folder?")))
        f.write(line(gemini_message("g3", "gemini", "", toolCalls=[{**call, "id": "c2"}])))
        f.write(line(gemini_message("g3", "gemini", "", toolCalls=[{**done, "id": "c2"}])))
    report = index_paths(conn, [tmp_path / ".gemini"])
    assert report.updated == 1 and conn.execute("SELECT whole_size FROM file_tails").fetchone()[0] == tail
    body = "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks ORDER BY seq"))
    assert "kumquat" in body and body.count("Tool: [result] a.txt") == 2
    assert [h.key for h in search(conn, "kumquat").hits] == ["aaaa1111-2222"]


def test_gemini_clis_own_context_is_no_title_and_no_user_turn(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "Gemini CLI 0.61 opens a session with a user turn of its own, <session_context>; its UI hides it."
    chats = tmp_path / ".gemini" / "tmp" / "my-app" / "chats"
    chats.mkdir(parents=True)
    context = "<session_context>\nThis is the Gemini CLI. We are setting up the context.\n</session_context>"
    (chats / "session-2026-05-02T09-00-bbbb2222.jsonl").write_text(
        line({"sessionId": "bbbb2222-3333", "projectHash": "x", "startTime": "2026-05-02T09:00:00Z"})
        + line(gemini_message("u0", "user", context))
        + line(gemini_message("u1", "user", "graft the quince onto the pear stock"))
        + line(gemini_message("g1", "gemini", "Cleft grafting works for quince on pear."))
    )
    index_paths(conn, [tmp_path / ".gemini"])
    assert conn.execute("SELECT title FROM documents").fetchone()[0] == "graft the quince onto the pear stock"
    body = "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks ORDER BY seq"))
    assert "Tool: <session_context>" in body and "User: <session_context>" not in body


def test_gemini_logs_and_checkpoints(conn: sqlite3.Connection, tmp_path: Path) -> None:
    project = tmp_path / "tmp" / "3f2a"  # an older build's hashed folder: projects.json names it
    (project / "chats").mkdir(parents=True)
    import hashlib

    digest = hashlib.sha256(b"/home/me/quince").hexdigest()
    (tmp_path / "projects.json").write_text(json.dumps({"projects": {"/home/me/quince": "quince"}}))
    (project / "chats" / "session-2026-01-01T09-00-bbbb2222.json").write_text(
        json.dumps(
            {
                "sessionId": "bbbb2222-3333",
                "projectHash": digest,
                "messages": [gemini_message("u1", "user", "plant the quince tree"), "not a message"],
            }
        )
    )
    (project / "logs.json").write_text(
        json.dumps(
            [
                {
                    "sessionId": "bbbb2222-3333",
                    "messageId": 0,
                    "type": "user",
                    "message": "plant the quince tree",
                },
                {"sessionId": "cccc", "messageId": 0, "type": "user", "message": "prune the medlar hedge"},
                {"sessionId": "cccc", "messageId": 1, "type": "user", "message": "/quit"},
            ]
        )
    )
    (project / "checkpoint-orchard.json").write_text(
        json.dumps(
            {
                "history": [
                    {"role": "user", "parts": [{"text": "which fruit trees suit clay soil"}]},
                    {"role": "model", "parts": [{"text": "Quince and medlar both suit heavy clay soil."}]},
                    {
                        "role": "model",
                        "parts": [{"functionCall": {"name": "web_search", "args": {"query": "clay"}}}],
                    },
                ]
            }
        )
    )
    report = index_paths(conn, [tmp_path])
    assert [(s.path.rsplit("/", 1)[-1], s.reason) for s in report.skipped] == [
        ("session-2026-01-01T09-00-bbbb2222.json:messages[1]", "not a message object; the others are indexed")
    ]
    docs = {r["key"]: r for r in conn.execute("SELECT key, kind, title, meta FROM documents")}
    assert set(docs) == {"bbbb2222-3333", "cccc", "checkpoint-orchard"}  # logs.json's first is in chats/
    assert {d["kind"] for d in docs.values()} == {"gemini-cli"}
    assert json.loads(docs["bbbb2222-3333"]["meta"])["project"] == "/home/me/quince"
    assert docs["cccc"]["title"] == "prune the medlar hedge"
    assert docs["checkpoint-orchard"]["title"] == "checkpoint orchard: which fruit trees suit clay soil"


def test_copilot_events_with_a_subagent_and_a_broken_line(conn: sqlite3.Connection, tmp_path: Path) -> None:
    folder = tmp_path / "session-state" / "030f200c"
    folder.mkdir(parents=True)
    real = shared(
        *COPILOT, "qiaolei81-copilot-session-viewer", "__tests__", "fixtures", "sessions", "copilot-cli"
    )
    lines = (real / "session-demo" / "events.jsonl").read_text().splitlines(keepends=True)
    (folder / "events.jsonl").write_text("".join(lines[:5]) + '{"type": "user.mess\n' + "".join(lines[5:]))
    report = index_paths(conn, [tmp_path])
    assert [(s.path.rsplit("/", 1)[-1], s.reason[:14]) for s in report.skipped] == [
        ("events.jsonl:6", "not valid JSON")
    ]
    body = "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks ORDER BY seq"))
    assert "Assistant: [subagent] - Lines in hello.py: 6" in body
    assert "Assistant: Subagent findings:" in body and "Tool: [view] /Users/testuser" in body
    assert "You are the GitHub Copilot CLI" not in body  # the system prompt is no conversation


def test_opencode_older_and_current_trees_and_a_broken_part(conn: sqlite3.Connection, tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    shutil.copytree(shared(*OPENCODE_TREES, "opencode", "storage_v2"), storage)
    (storage / "part" / "m_assistant_small" / "003.json").write_text('{"type": "text", "text": "cut sho')
    report = index_paths(conn, [storage])
    assert [(s.path.split("/storage/")[-1], s.reason[:14]) for s in report.skipped] == [
        ("message/s_stage0_small/msg_0001.json#part/m_assistant_small/003.json", "not valid JSON")
    ]
    body = {
        r["key"]: r["text"]
        for r in conn.execute(
            "SELECT d.key, group_concat(c.text, '\n') AS text FROM chunks c JOIN documents d ON d.id = c.document_id "
            "GROUP BY d.key"
        )
    }
    assert set(body) == {"s_stage0_small", "s_stage0_large"}
    assert "Assistant: Found 2 files." in body["s_stage0_small"]
    assert "Tool: [bash] ls" in body["s_stage0_small"] and "Tool: [result] a.txt" in body["s_stage0_small"]
    assert "Thinking: Investigating failing command." in body["s_stage0_large"]
    # a session is read again when a message of it is written, with the parts it gained
    (storage / "part" / "m_assistant_small" / "003.json").write_text(
        json.dumps(
            {"id": "p3", "messageID": "m_assistant_small", "type": "text", "text": "Also a persimmon."}
        )
    )
    (storage / "message" / "s_stage0_small" / "msg_0002.json").touch()
    report = index_paths(conn, [storage])
    assert report.updated == 1 and report.skipped == []
    assert [h.key for h in search(conn, "persimmon").hits] == ["s_stage0_small"]


def test_aider_quirks_and_broken_lines(conn: sqlite3.Connection, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    history = repo / ".aider.chat.history.md"
    history.write_bytes(
        b"\n# aider chat started at 2025-03-01 10:00:00\n\n"
        b"> Aider v0.80.0  \n> Main model: sonnet with diff edit format  \n"
        b"> Command Line Args:   --verbose\n\nDefaults:\n  --env-file: .env  \n\n"
        b"#### /add rhubarb.py  \n> Added rhubarb.py to the chat  \n\n"
        b"#### make the rhubarb crumble crisper  \n\n"
        b"Bake it ten minutes longer at a higher heat.\n\nrhubarb.py\n```python\n<<<<<<< SEARCH\nx = 1\n=======\n"
        b"x = 2\n>>>>>>> REPLACE\n```\n\n> Tokens: 1k sent, 50 received.  \n"
        b"> bad byte \xff here  \n"
        b"\n# aider chat started at yesterday-ish\n\n#### the gooseberry fool  \n\nAdd cream to the gooseberry fool.\n\n"
    )
    report = index_paths(conn, [repo])
    assert [(s.path.rsplit("/", 1)[-1], s.reason) for s in report.skipped] == [
        (".aider.chat.history.md:28", "not valid UTF-8; read with replacement characters"),
        (
            ".aider.chat.history.md:30",
            "session start 'yesterday-ish' is not a date; its session is indexed undated",
        ),
    ]
    docs = {r["key"]: r for r in conn.execute("SELECT key, title, meta FROM documents")}
    crumble = docs[str(local_stamp("2025-03-01 10:00:00"))]  # Aider writes local time
    assert crumble["title"] == "make the rhubarb crumble crisper"  # not the /command
    assert json.loads(crumble["meta"])["model"] == "sonnet" and "line-30" in docs
    body = "\n".join(r[0] for r in conn.execute("SELECT text FROM chunks ORDER BY document_id, seq"))
    # a quoted output of many lines is Aider's, up to the line that ends with two spaces
    assert "Command Line Args:   --verbose\n\nDefaults:\n  --env-file: .env\n\nUser: /add rhubarb.py" in body
    assert "Assistant: Defaults" not in body
    assert "Assistant: Bake it ten minutes longer at a higher heat.\n\nrhubarb.py" in body
    assert "Tool: [edit] ```python\n<<<<<<< SEARCH" in body


def test_a_gemini_session_resumed_into_jsonl_is_one_document(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "A newer Gemini CLI resuming a .json session copies it to <name>.jsonl and goes on there."
    chats = tmp_path / "chats"
    chats.mkdir()
    header = {"sessionId": "dddd4444", "projectHash": "x"}
    first = gemini_message("u1", "user", "sort the loquat crates")
    (chats / "session-2026-02-01T08-00-dddd4444.json").write_text(json.dumps({**header, "messages": [first]}))
    (chats / "session-2026-02-01T08-00-dddd4444.jsonl").write_text(
        line(header)
        + line(first)
        + line(gemini_message("g1", "gemini", "Sorted the loquat crates by weight."))
    )
    index_paths(conn, [chats])
    assert [
        (r["key"], r["path"][-1])
        for r in conn.execute("SELECT d.key, f.path FROM documents d JOIN files f ON f.id = d.file_id")
    ] == [("dddd4444", "l")]
