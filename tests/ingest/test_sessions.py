"""Agent session logs (Claude Code, Codex): real sessions from ../shared, fixtures for what
they lack (a torn last line, a broken line, Codex's older format, huge tool output), read
whole and read on as they grow."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from memdex.ingest.kinds.claude_code import _messages
from memdex.ingest.pipeline import index_paths
from memdex.query.request import Filters, SearchRequest
from memdex.query.search import search
from memdex.store import db
from tests.conftest import shared

CLAUDE_CODE = ("chats", "claude-code")
CODEX = ("chats", "codex")


def documents(conn: sqlite3.Connection) -> dict[str, sqlite3.Row]:
    return {r["key"]: r for r in conn.execute("SELECT * FROM documents")}


def text_of(conn: sqlite3.Connection, key: str) -> str:
    rows = conn.execute(
        "SELECT c.text FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.key = ? ORDER BY seq",
        (key,),
    )
    return "\n\n".join(r[0] for r in rows)


def tail_of(conn: sqlite3.Connection, path: Path) -> sqlite3.Row:
    return conn.execute(
        "SELECT t.* FROM file_tails t JOIN files f ON f.id = t.file_id WHERE f.path = ?", (str(path),)
    ).fetchone()


@pytest.fixture
def sessions(conn: sqlite3.Connection) -> sqlite3.Connection:
    report = index_paths(conn, [shared(*CLAUDE_CODE), shared(*CODEX)])
    assert report.skipped == []
    return conn


def test_every_session_is_a_conversation_with_its_project_and_branch(sessions: sqlite3.Connection) -> None:
    docs = documents(sessions)
    kinds = {(d["kind"], d["platform"]) for d in docs.values()}
    assert kinds == {("claude-code", "claude-code"), ("codex", "codex")}
    codex = docs["019a93b9-f380-7600-98ff-940e6b99603c"]
    meta = json.loads(codex["meta"])
    assert meta["project"] == "/home/user/projects/temp/chatbot-ui"
    assert meta["version"] == "0.58.0" and meta["originator"] == "codex_cli_rs"
    entire = json.loads(docs["198393f2-22db-477b-ac77-1825bea883ae"]["meta"])
    assert entire["branch"] == "soph/bugfix-for-inconsistent-session-state"
    assert entire["compactions"] == 1
    # files with no conversation make no document: summary only, snapshots only, empty, warmup
    for key in ("4e27c414-a885-46a0-b5c8-d58e1417377d", "a95fea4a-b88a-4e49-ac07-4cc323d8700c"):
        assert key not in docs
    assert not [k for k in docs if "c3d572ee" in k]


def test_titles_come_from_summaries_or_the_first_real_prompt(sessions: sqlite3.Connection) -> None:
    docs = documents(sessions)
    summary = docs["326189cf-5676-4237-8cde-1ce80aae4a9f"]["title"]
    summaries = [
        json.loads(line)["summary"]
        for line in shared(
            *CLAUDE_CODE, "daaain-claude-code-log", "-Users-dain-workspace-claude-code-log-sample"
        )
        .joinpath("326189cf-5676-4237-8cde-1ce80aae4a9f.jsonl")
        .read_text()
        .splitlines()
        if '"type":"summary"' in line
    ]
    assert summary in summaries
    # the first prompt typed, not the /init command before it
    assert docs["ba79134d-b6e9-4867-af0c-6941038c9e4b"]["title"].startswith("ok, now write the program")
    # IDE context around a prompt is not its title
    assert docs["5ed31c36-bca8-40fd-8d24-f1a1f0af7901"]["title"].startswith("I keep getting mysterious build")
    assert docs["019e1625-789d-76c0-80ab-3724b5ddb799"]["title"] == "show tools"  # not AGENTS.md
    for doc in docs.values():
        assert not doc["title"].startswith(("<", "Warmup", "untitled", "# AGENTS.md"))


def assistant_said(path: Path) -> list[str]:
    "Every assistant message in words of a Claude Code file, as memdex reads them."
    out = []
    for line in path.read_text("utf-8").splitlines():
        record = json.loads(line) if line.strip() else {}
        if record.get("type") == "assistant":
            out += [text for role, text in _messages(record) if role == "assistant"]
    return out


@pytest.mark.slow
def test_what_the_assistant_said_finds_its_session_first(sessions: sqlite3.Connection) -> None:
    "Eight words from the middle of each assistant message, searched as typed."
    first = top3 = total = 0
    for path in sorted(shared(*CLAUDE_CODE).rglob("*.jsonl")):
        row = sessions.execute(
            "SELECT key FROM documents d JOIN files f ON f.id = d.file_id WHERE f.path = ?", (str(path),)
        ).fetchone()
        if row is None:
            continue
        body = text_of(sessions, row["key"])
        for text in assistant_said(path):
            words = text.split()
            if len(words) < 8 or text.strip()[:100] not in body:
                continue  # short, or on a branch the person rewound
            query = " ".join(words[len(words) // 2 - 4 : len(words) // 2 + 4])
            keys = [h.key for h in search(sessions, SearchRequest(query, limit=3)).hits]
            total += 1
            top3 += row["key"] in keys
            subagent = "/agent-" in row["key"]
            if not subagent:  # a subagent's boilerplate ("Let me ...") is shared by its siblings
                assert keys[:1] == [row["key"]], (path.name, query, keys)
            first += keys[:1] == [row["key"]]
    assert total >= 80
    assert top3 == total and first >= total - 4


def test_what_codex_said_finds_its_session_first(sessions: sqlite3.Connection) -> None:
    total = 0
    for path in sorted(shared(*CODEX).rglob("*.jsonl")):
        key = json.loads(path.read_text("utf-8").splitlines()[0])["payload"]["id"]
        for line in path.read_text("utf-8").splitlines():
            payload = json.loads(line).get("payload", {})
            if payload.get("type") != "message" or payload.get("role") != "assistant":
                continue
            words = " ".join(c.get("text", "") for c in payload["content"]).split()
            if len(words) < 8:
                continue
            query = " ".join(words[len(words) // 2 - 4 : len(words) // 2 + 4])
            keys = [h.key for h in search(sessions, SearchRequest(query, limit=3)).hits]
            assert keys[:1] == [key], (path.name, query, keys)
            total += 1
    assert total >= 10


def test_codex_messages_once_without_instructions(sessions: sqlite3.Connection) -> None:
    body = text_of(sessions, "019e1625-789d-76c0-80ab-3724b5ddb799")
    assert body.count("User: show tools") == 1  # the event repeating the response item is dropped
    assert "permissions instructions" not in body and "AGENTS.md instructions" not in body
    assert "Tool: [exec_command]" in body and "Tool: [apply_patch]" in body
    assert "[web search] OpenCode config compact" in body
    older = sessions.execute(
        "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id "
        "WHERE d.key = '019a93b9-f380-7600-98ff-940e6b99603c' AND c.text LIKE '%User: finish up the users work%'"
    ).fetchone()[0]
    assert older == 1


def test_a_rewound_prompt_leaves_the_old_branch_out(sessions: sqlite3.Connection) -> None:
    body = text_of(sessions, "03eb5929-52b3-4b13-ada3-b93ae35806b8")
    assert "I actually don't like much this idea" in body
    assert "I very much like this idea" not in body  # the prompt it replaced


def test_sidechains_are_kept_and_marked(sessions: sqlite3.Connection) -> None:
    inline = text_of(sessions, "5c0375b4-57a5-4f26-b12d-d022ee4e51b7")
    assert "[subagent]" in inline
    docs = documents(sessions)
    agents = [k for k in docs if k.startswith("ef958aa1-0e93-49f0-bb71-150f63befcd1/agent-")]
    assert len(agents) == 6
    meta = json.loads(docs[agents[0]]["meta"])
    assert meta["subagent"] is True and meta["session"] == "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    assert docs[agents[0]]["title"].startswith("subagent: ")


def test_project_and_branch_filter(sessions: sqlite3.Connection) -> None:
    def keys(query: str, **filters: str) -> set[str]:
        request = SearchRequest(query, limit=50, filters=Filters(**filters))  # type: ignore[arg-type]
        return {h.key for h in search(sessions, request).hits}

    chatbot = "019a93b9-f380-7600-98ff-940e6b99603c"
    assert chatbot in keys("lmstudio") and len(keys("ollama")) > 1
    assert keys("ollama", project="chatbot-ui") == {chatbot}
    assert keys("ollama", project="/home/user/projects/temp/chatbot-ui") == {chatbot}
    assert keys("ollama", project="temp/chatbot-ui") == {chatbot}
    assert keys("ollama", project="chatbot") == set()  # part of a folder's name is not the folder
    entire = keys("hook", branch="soph/bugfix-for-inconsistent-session-state")
    assert entire == {"198393f2-22db-477b-ac77-1825bea883ae"}
    assert len(keys("hook")) > 1


# -- fixtures for what the real sessions lack -----------------------------------------------
def claude_line(n: int, role: str, text: str, parent: str | None, **extra: object) -> str:
    record = {
        "parentUuid": parent,
        "isSidechain": False,
        "type": role,
        "sessionId": "s-1",
        "cwd": "/work/proj",
        "gitBranch": "main",
        "version": "2.1.0",
        "uuid": f"u{n}",
        "timestamp": f"2026-11-20T10:{n // 60:02d}:{n % 60:02d}Z",
        "message": {"role": role, "content": text if role == "user" else [{"type": "text", "text": text}]},
        **extra,
    }
    return json.dumps(record)


def conversation(first: int, count: int, parent: str | None) -> list[str]:
    lines = []
    for n in range(first, first + count):
        role = "user" if n % 2 == 0 else "assistant"
        lines.append(claude_line(n, role, f"message {n} about topic{n} and the weather", parent))
        parent = f"u{n}"
    return lines


@pytest.fixture
def session(tmp_path: Path) -> Path:
    "Where Claude Code would write a session of the project /work/proj: projects/-work-proj/s-1.jsonl."
    folder = tmp_path / "projects" / "-work-proj"
    folder.mkdir(parents=True)
    return folder / "s-1.jsonl"


def test_a_broken_line_is_reported_with_its_number_and_the_rest_indexed(
    conn: sqlite3.Connection, tmp_path: Path, session: Path
) -> None:
    lines = conversation(0, 20, None)
    lines[7] = lines[7][:50]  # cut in the middle of the file
    session.write_text("\n".join(lines) + "\n")
    report = index_paths(conn, [tmp_path / "projects"])
    assert [s.path for s in report.skipped] == [f"{session}:8"]
    assert "not valid JSON" in report.skipped[0].reason
    assert [h.key for h in search(conn, "topic15").hits] == ["s-1"]  # after the broken line
    again = index_paths(conn, [tmp_path / "projects"])  # reported again while it is there
    assert [s.path for s in again.skipped] == [f"{session}:8"]


def test_appended_lines_are_read_on_from_where_reading_stopped(
    conn: sqlite3.Connection, tmp_path: Path, session: Path
) -> None:
    lines = conversation(0, 40, None)
    torn = claude_line(40, "user", "message 40 about topic40", "u39")
    session.write_text("\n".join(lines) + "\n" + torn[:30])  # the last line mid-write
    report = index_paths(conn, [tmp_path / "projects"])
    assert report.skipped == []  # a torn last line is waited for, not reported
    assert search(conn, "topic40").hits == []
    first = tail_of(conn, session)
    assert first["lines"] == 40

    more = conversation(40, 12, "u39")
    with session.open("a") as f:  # the torn line completes, and more follow
        f.write(torn[30:] + "\n" + "\n".join(more[1:]) + "\n")
    report = index_paths(conn, [tmp_path / "projects"])
    assert report.updated == 1 and report.skipped == []
    after = tail_of(conn, session)
    assert after["whole_size"] == first["whole_size"]  # read on, not read whole
    assert after["offset"] == session.stat().st_size and after["lines"] == 52
    assert [h.key for h in search(conn, "topic51").hits] == ["s-1"]
    assert [h.key for h in search(conn, "topic40").hits] == ["s-1"]
    assert json.loads(documents(conn)["s-1"]["meta"])["message_count"] == 52

    # the same as reading the grown file whole
    whole_db = tmp_path / "whole.db"
    whole = db.connect(whole_db)
    index_paths(whole, [tmp_path / "projects"])
    assert text_of(conn, "s-1") == text_of(whole, "s-1")
    assert conn.execute("INSERT INTO bodies_fts(bodies_fts) VALUES ('integrity-check')").fetchall() == []
    whole.close()


def test_a_rewritten_session_is_read_whole(conn: sqlite3.Connection, tmp_path: Path, session: Path) -> None:
    session.write_text("\n".join(conversation(0, 30, None)) + "\n")
    index_paths(conn, [tmp_path / "projects"])
    lines = conversation(0, 34, None)
    lines[3] = claude_line(3, "assistant", "message 3 rewritten as zeppelin", "u2")
    session.write_text("\n".join(lines) + "\n")
    index_paths(conn, [tmp_path / "projects"])
    assert [h.key for h in search(conn, "zeppelin").hits] == ["s-1"]
    assert search(conn, "topic3").hits == []
    assert tail_of(conn, session)["whole_size"] == session.stat().st_size


def test_a_rewind_after_reading_reads_the_file_whole(
    conn: sqlite3.Connection, tmp_path: Path, session: Path
) -> None:
    session.write_text("\n".join(conversation(0, 30, None)) + "\n")
    index_paths(conn, [tmp_path / "projects"])
    with session.open("a") as f:  # the person edits prompt 20: a new branch from message 19
        f.write(claude_line(100, "user", "a different question about quasars", "u19") + "\n")
        f.write(claude_line(101, "assistant", "an answer about quasars", "u100") + "\n")
    index_paths(conn, [tmp_path / "projects"])
    body = text_of(conn, "s-1")
    assert "quasars" in body and "topic25" not in body and "topic19" in body


def test_tool_output_and_images_are_trimmed(conn: sqlite3.Connection, tmp_path: Path, session: Path) -> None:
    huge = "\n".join(f"build line {n}: compiled module ok" for n in range(40_000))  # ~1.4 MB
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "A" * 500_000}}
    lines = [
        claude_line(0, "user", "why does the flux capacitor overheat", None),
        json.dumps(
            {
                "parentUuid": "u0",
                "type": "assistant",
                "sessionId": "s-1",
                "uuid": "u1",
                "message": {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "name": "Bash", "input": {"command": "make"}}],
                },
            }
        ),
        json.dumps(
            {
                "parentUuid": "u1",
                "type": "user",
                "sessionId": "s-1",
                "uuid": "u2",
                "message": {"role": "user", "content": [{"type": "tool_result", "content": huge}, image]},
            }
        ),
        claude_line(3, "assistant", "The flux capacitor overheats because the coolant loop is open.", "u2"),
    ]
    session.write_text("\n".join(lines) + "\n")
    index_paths(conn, [tmp_path / "projects"])
    doc = documents(conn)["s-1"]
    assert doc["size_bytes"] < 3_000
    body = text_of(conn, "s-1")
    assert "bytes trimmed" in body and "[image]" in body and "AAAA" not in body
    assert "Tool: [Bash] make" in body
    topics = json.loads(doc["topics"])
    assert "compiled" not in topics and "module" not in topics  # tool output gives no topics


def test_what_was_said_outranks_a_tool_output_with_the_same_words(
    conn: sqlite3.Connection, tmp_path: Path, session: Path
) -> None:
    "Issue 15: tool output is kept, but never ranks above what was said."
    said = "The zqflux gasket leaks because the zqflux clamp is loose."
    lines: list[str] = []
    parent = None
    for n in range(12):
        role = "user" if n % 2 == 0 else "assistant"
        lines.append(claude_line(n, role, f"message {n} about the weather and lunch plans", parent))
        parent = f"u{n}"
    lines.append(
        json.dumps(
            {
                "parentUuid": parent,
                "type": "user",
                "sessionId": "s-1",
                "uuid": "u12",
                "message": {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "content": "zqflux gasket: zqflux clamp torque 4 Nm"}
                    ],
                },
            }
        )
    )
    lines += [
        claude_line(n, "user" if n % 2 == 0 else "assistant", f"message {n} about lunch", f"u{n - 1}")
        for n in range(13, 24)
    ]
    lines.append(claude_line(24, "assistant", said, "u23"))
    session.write_text("\n".join(lines) + "\n")
    index_paths(conn, [tmp_path / "projects"])
    hits = search(conn, "zqflux gasket clamp", granularity="chunk").hits
    first = hits[0].matching_chunks[0]["window"]
    roles = {m["n"]: m["role"] for m in first["messages"]}
    assert [roles[n] for n in first["matched"]] == ["assistant"], first
    found = [n for h in hits for n in h.matching_chunks[0]["window"]["matched"]]
    assert 12 in found  # the tool output is still found, after


def test_codex_older_format(conn: sqlite3.Connection, tmp_path: Path) -> None:
    folder = tmp_path / "sessions" / "2025" / "05" / "02"
    folder.mkdir(parents=True)
    lines = [
        {"id": "old-1", "timestamp": "2025-05-02T10:00:00Z", "instructions": None, "git": {"branch": "dev"}},
        {"record_type": "state"},
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": "rename the teapot module"}],
        },
        {
            "type": "function_call",
            "name": "shell",
            "arguments": json.dumps({"command": ["rg", "teapot"]}),
            "call_id": "c1",
        },
        {
            "type": "function_call_output",
            "call_id": "c1",
            "output": json.dumps({"output": "src/teapot.py", "metadata": {"exit_code": 0}}),
        },
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Renamed teapot to kettle."}],
        },
        {"record_type": "state"},
    ]
    (folder / "rollout-2025-05-02T10-00-00-old-1.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines) + "\n"
    )
    index_paths(conn, [tmp_path / "sessions"])
    doc = documents(conn)["old-1"]
    assert doc["kind"] == "codex" and doc["title"] == "rename the teapot module"
    assert json.loads(doc["meta"])["branch"] == "dev"
    body = text_of(conn, "old-1")
    assert "Tool: [shell] rg teapot" in body and "Tool: [result] src/teapot.py" in body
    assert "Assistant: Renamed teapot to kettle." in body


def test_a_session_copied_whole_then_grown_equals_a_whole_read(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "A real session, cut at 80% of its lines then completed, reads on to what a whole read gives."
    real = shared(
        *CLAUDE_CODE,
        "daaain-claude-code-log",
        "-experiments-worktrees",
        "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl",
    )
    lines = real.read_bytes().split(b"\n")
    root = tmp_path / "projects"
    (root / "p").mkdir(parents=True)
    session = root / "p" / real.name
    cut = int(len(lines) * 0.8)
    session.write_bytes(b"\n".join(lines[:cut]) + b"\n")
    index_paths(conn, [root])
    first = tail_of(conn, session)
    shutil.copyfile(real, session)
    index_paths(conn, [root])
    assert tail_of(conn, session)["whole_size"] == first["whole_size"]  # read on
    whole = db.connect(tmp_path / "whole.db")
    index_paths(whole, [root])
    key = "ef958aa1-0e93-49f0-bb71-150f63befcd1"
    assert text_of(conn, key) == text_of(whole, key)
    assert documents(conn)[key]["title"] == documents(whole)[key]["title"]
    whole.close()
