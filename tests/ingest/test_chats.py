"""ChatGPT, Claude and Gemini exports (../shared/data/chats, MIT/Apache-2.0): message order,
counts and edge cases -- branches, multimodal parts, thoughts, tool use, broken records."""

import json
import sqlite3
from pathlib import Path

import pytest

from memdex.ingest.base import SourceFile
from memdex.ingest.chat import Message, chunk_messages, distinctive_words, signals
from memdex.ingest.kinds import chatgpt, claude
from memdex.ingest.kinds.chatgpt import ChatGPTKind
from memdex.ingest.kinds.claude import ClaudeKind
from memdex.ingest.kinds.gemini import GeminiKind, html_text
from memdex.ingest.pipeline import index_paths
from memdex.query.search import search


def _source(path: Path, chunk_tokens: int | None = None) -> SourceFile:
    return SourceFile(path, path.name, path.parent, path.read_bytes(), "user", chunk_tokens)


def _records(path: Path) -> list[dict]:
    data = json.loads(path.read_text())
    return data if isinstance(data, list) else [data]


# -- ChatGPT ------------------------------------------------------------------------------
def test_chatgpt_active_branch_and_content_types(shared_data: Path) -> None:
    record = _records(shared_data / "chats/chatgpt/chatlore/conversations.json")[0]
    conv = chatgpt.read_conversation(record)
    assert [m.role for m in conv.messages] == ["user", "assistant", "user", "assistant", "tool", "assistant"]
    texts = [m.text for m in conv.messages]
    assert texts[0] == "Why is my query on orders slow?\n[attachment: explain.txt]"
    assert (
        texts[1] == "You are missing an index on customer_id. Add a composite index."
    )  # not the regenerated one
    assert texts[2] == "Here is the plan output. Can you write the statement?"  # image part left out
    assert texts[3] == "```sql\nCREATE INDEX idx_orders_customer ON orders (customer_id, created_at);\n```"
    assert texts[4] == "CREATE INDEX"  # execution output
    assert "First answer that was regenerated." not in "\n".join(texts)
    assert conv.created == "2026-01-01T10:00:00Z" and conv.title == "Postgres indexing"


def test_chatgpt_broken_records_are_reported_and_the_rest_indexed(shared_data: Path) -> None:
    parsed = ChatGPTKind().parse(_source(shared_data / "chats/chatgpt/chatlore/conversations.json"))
    assert [d.title for d in parsed.documents] == ["Postgres indexing", "Trip ideas"]
    assert parsed.skipped == [
        ("33333333-aaaa-4bbb-8ccc-000000000003", "record has no mapping (the message tree)"),
        ("4 (No id)", "record has no id (conversation_id or id)"),
    ]


def test_chatgpt_without_current_node_or_children(shared_data: Path) -> None:
    parsed = ChatGPTKind().parse(
        _source(shared_data / "chats/chatgpt/quentinous-chatgpt-export-studio/conversations.json")
    )
    first = chatgpt.read_conversation(
        _records(shared_data / "chats/chatgpt/quentinous-chatgpt-export-studio/conversations.json")[0]
    )
    assert [d.key for d in parsed.documents] == ["conv-001", "conv-002"]
    assert [m.role for m in first.messages] == ["user", "assistant", "user", "assistant"]
    assert first.messages[-1].text.startswith("Great beginner projects include:")


def test_chatgpt_real_export_walks_45_nodes_in_order(shared_data: Path) -> None:
    (record,) = _records(shared_data / "chats/chatgpt/realazthat-chatgpt2graph/conversations.json")
    conv = chatgpt.read_conversation(record)
    assert len(record["mapping"]) == 45
    assert len(conv.messages) == 42  # less the empty root and two system messages
    times = [m.time for m in conv.messages if m.time]
    assert times == sorted(times)
    assert {m.role for m in conv.messages} == {"user", "assistant", "tool"}
    assert sum(m.text.startswith("```") for m in conv.messages) == 11


# -- Claude -------------------------------------------------------------------------------
def test_claude_branches_thinking_tools_and_attachments(shared_data: Path) -> None:
    records = _records(shared_data / "chats/claude/chatlore/conversations.json")
    conv = claude.read_conversation(records[0])
    assert [m.role for m in conv.messages] == ["user", "assistant", "user"]
    first, answer, last = (m.text for m in conv.messages)
    assert first == (
        "Why does this not compile?\n\n[attachment: main.rs]\nfn main() { let r; { let x = 5; r = &x; } }"
        "\n\n[file: screenshot.png]"
    )
    assert answer == (
        'Retried answer: move x out of the inner scope.\n\n[tool use: repl] {"code": "cargo check"}'
        "\n\n[tool result]\nFinished dev profile"
    )
    assert "internal reasoning" not in " ".join(m.text for m in conv.messages)
    assert last == "That worked, thanks."
    old = claude.read_conversation(records[1])
    assert [m.text for m in old.messages] == ["Give me a name for a cat.", "Biscuit."]
    with pytest.raises(Exception, match="conversation has no chat_messages"):
        claude.read_conversation(records[2])


def test_claude_out_of_order_messages_are_sorted_by_time(shared_data: Path) -> None:
    (record,) = _records(shared_data / "chats/claude/simonw-claude-to-sqlite/artifacts.json")
    conv = claude.read_conversation(record)
    assert len(conv.messages) == 20
    assert conv.messages[0].text.startswith("Built me an artifact with no react")
    assert [m.role for m in conv.messages] == ["user", "assistant"] * 10
    times = [m.time for m in conv.messages]
    assert times == sorted(times)


@pytest.mark.parametrize(
    ("name", "messages"),
    [("debugging.json", 4), ("history.json", 6), ("api.json", 2)],
)
def test_claude_single_conversation_files(shared_data: Path, name: str, messages: int) -> None:
    parsed = ClaudeKind().parse(
        _source(shared_data / "chats/claude/osteele-claude-chat-viewer/sampleConversations" / name)
    )
    (doc,) = parsed.documents
    assert doc.meta["message_count"] == messages
    assert doc.platform == "claude" and doc.description  # its summary


def test_claude_blocks_with_no_text_fall_back_to_the_text_field(shared_data: Path) -> None:
    record = _records(
        shared_data / "chats/claude/osteele-claude-chat-viewer/testdata/conversation-rendering-tests.json"
    )[0]
    conv = claude.read_conversation(record)
    assert len(conv.messages) == 10
    assert conv.messages[3].text == "This message has empty text in content item"


# -- Gemini -------------------------------------------------------------------------------
def test_gemini_takeout(shared_data: Path) -> None:
    parsed = GeminiKind().parse(_source(shared_data / "chats/gemini/chatlore/MyActivity.json"))
    assert [d.title for d in parsed.documents] == [
        "Give me a recipe for Neapolitan pizza dough",  # 18:00 and 18:12 make one conversation
        "What is the capital of Australia?",
        "Wie spät ist es in Tokio?",  # the German "Eingegebener Prompt:" label
    ]
    assert [d.meta["message_count"] for d in parsed.documents] == [4, 3, 2]
    assert parsed.skipped == [("7", "activity time 'not a time' is not a date")]
    pizza = parsed.documents[0].chunks[0].text
    assert "500 g flour" in pizza and "Mix & rest." in pizza and "ignored()" not in pizza


def test_html_text() -> None:
    assert (
        html_text("<p>a &amp; b</p><script>x()</script><ul><li>one</li><li>two</li></ul>")
        == "a & b\none\ntwo"
    )


# -- shared chunking and signals ------------------------------------------------------------
def test_chunks_are_whole_messages_under_the_bound() -> None:
    messages = [
        Message("user" if i % 2 == 0 else "assistant", f"message {i} " + "word " * 30) for i in range(20)
    ]
    chunks = chunk_messages(messages, "T", bound=600)
    assert all(len(c.text.encode()) <= 600 for c in chunks)
    assert [c.meta["msg_start"] for c in chunks] == sorted(c.meta["msg_start"] for c in chunks)
    covered = [i for c in chunks for i in range(c.meta["msg_start"], c.meta["msg_end"] + 1)]
    assert covered == list(range(20))
    assert chunks[0].text.startswith("User: message 0") and "\n\nAssistant: message 1" in chunks[0].text
    assert chunks[0].meta["roles"] == ["user", "assistant"]


def test_chunks_say_where_each_message_starts() -> None:
    "Issue 15: a search cuts its passage at these offsets (memdex.query.passages), never mid-message."
    messages = [
        Message(
            "user" if i % 2 == 0 else "assistant", f"message {i} " + "word " * 30, f"2025-01-0{1 + i // 4}"
        )
        for i in range(20)
    ]
    chunks = chunk_messages(messages, "T", bound=600)
    for c in chunks:
        offsets = c.meta["messages"]
        assert [o[0] for o in offsets] == list(range(c.meta["msg_start"], c.meta["msg_end"] + 1))
        for index, offset, role, time in offsets:
            label = "User" if role == "user" else "Assistant"
            assert c.text[offset:].startswith(f"{label}: message {index} ")
            assert time == messages[index].time


def test_a_long_message_is_cut_on_its_own_and_never_empty() -> None:
    long = Message("assistant", "\n\n".join(["paragraph " + "x" * 50] * 40))
    chunks = chunk_messages([Message("user", "short"), long, Message("user", "after")], "T", bound=400)
    own = [c for c in chunks if c.meta["msg_start"] == 1]
    assert len(own) > 5 and all(c.meta["msg_end"] == 1 for c in own)
    assert all(c.text.strip() and len(c.text.encode()) <= 400 for c in chunks)


def test_signals_and_distinctive_words() -> None:
    messages = [
        Message("user", "We decided to use Postgres. Turns out the replica was lagging."),
        Message(
            "assistant",
            "Steps:\n1. Stop writes\n2. Promote the replica\n3. Repoint clients\n```sql\nSELECT 1;\n```",
        ),
        Message("user", "Postgres replica promotion done; postgres is happy."),
    ]
    assert signals(messages) == {
        "has_decisions": True,
        "has_discoveries": True,
        "has_procedures": True,
        "has_artifacts": True,
    }
    assert signals([Message("user", "hello there")]) == dict.fromkeys(
        ("has_decisions", "has_discoveries", "has_procedures", "has_artifacts"), False
    )
    assert distinctive_words(messages)[:2] == ["postgres", "replica"]


def test_small_talk_is_no_topic() -> None:
    "Patterns noticed and the topics layer show what a chat is about, not how people talk."
    said = "I think that's good, it's like the soapstone counter. You're right, soapstone it is."
    messages = [Message("user", said), Message("assistant", said)]
    assert distinctive_words(messages) == ["soapstone", "counter"]
    curly = "It doesn’t fit, it wasn’t cheap: I haven’t seen soapstone like it."  # exports' apostrophes
    assert distinctive_words([Message("user", curly)] * 2) == ["cheap", "seen", "soapstone"]


# -- indexing and search ----------------------------------------------------------------------
@pytest.mark.slow
def test_all_shared_chat_samples_index(conn: sqlite3.Connection, shared_data: Path) -> None:
    report = index_paths(conn, [shared_data / "chats"])
    # 20 exports; 31 agent session files: 17 Claude Code (and Qwen Code's log, which its
    # sniff takes, with no document), 2 Codex, 4 Gemini CLI, 4 Copilot CLI, 2 Aider histories
    # and 3 OpenCode sessions (a session's first message file stands for it); AGENT-FORMATS.md
    # as a note. Copilot CLI's session JSON mentions Gemini: it is no Takeout file, and not
    # reported as a broken one.
    assert report.added == 54
    assert sorted(s.reason for s in report.skipped) == [
        "activity time 'not a time' is not a date",
        "conversation has no chat_messages",
        "record has no id (conversation_id or id)",
        "record has no mapping (the message tree)",
    ]
    kinds = dict(conn.execute("SELECT kind, count(*) FROM documents GROUP BY kind").fetchall())
    assert kinds == {
        "chatgpt": 5,
        "claude": 18,
        "gemini": 3,
        "claude-code": 15,
        "codex": 2,
        "gemini-cli": 4,
        "copilot-cli": 4,
        "opencode": 3,
        "aider": 688,  # a document per session of Aider's own history (and one of AFI's)
        "note": 1,
    }
    assert conn.execute("SELECT count(*) FROM chunks WHERE trim(text) = ''").fetchone()[0] == 0
    again = index_paths(conn, [shared_data / "chats"])
    assert again.unchanged == 54 and len(again.skipped) == 4  # still reported on an unchanged run


def test_a_single_export_file_is_detected_by_content(
    conn: sqlite3.Connection, shared_data: Path, tmp_path: Path
) -> None:
    export = tmp_path / "Downloads" / "export"
    export.mkdir(parents=True)
    (export / "conversations.json").write_bytes(
        (shared_data / "chats/claude/chatlore/conversations.json").read_bytes()
    )
    (export / "users.json").write_text(
        '[{"uuid": "u1", "full_name": "Someone"}]'
    )  # part of a Claude export, not a chat
    report = index_paths(conn, [export / "conversations.json"])
    assert report.documents == 2
    index_paths(conn, [export])
    assert conn.execute("SELECT count(*) FROM files WHERE path LIKE '%users.json'").fetchone()[0] == 0


@pytest.mark.slow
def test_chat_results_at_both_granularities(conn: sqlite3.Connection, shared_data: Path) -> None:
    # Every sample but Aider's own 4 MB history (690 sessions, seconds to read), which adds
    # nothing this checks: tests/ingest/test_agents.py searches it.
    index_paths(conn, sorted(p for p in (shared_data / "chats").iterdir() if p.name != "aider"))
    doc = search(conn, "composite index customer_id").hits[0]
    assert (doc.title, doc.kind, doc.platform) == ("Postgres indexing", "chatgpt", "chatgpt")
    assert doc.chat and doc.chat["message_count"] == 6 and doc.chat["signals"]["has_artifacts"]
    assert doc.matching_chunks and "msg_start" in doc.matching_chunks[0]
    chunk = search(conn, "Sintra train", granularity="chunk", full_text=True).hits[0]
    assert chunk.title == "Trip ideas" and "Sintra is forty minutes away" in (chunk.text or "")
    # the export holds four conversations: the location names this one (documents.reference)
    assert chunk.location.endswith(f"conversations.json#{chunk.key} (messages 1-2)")
