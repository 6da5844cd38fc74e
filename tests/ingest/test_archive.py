"""The archive kind: CSV indexes and chunk files, read as one unit."""

import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from memdex.ingest.pipeline import index_changes, index_paths
from memdex.query.search import search


@pytest.fixture
def archive(sample_copy: Path) -> Path:
    return sample_copy / "chats" / "archive"


def _docs(conn: sqlite3.Connection) -> dict[str, sqlite3.Row]:
    return {r["key"]: r for r in conn.execute("SELECT * FROM documents WHERE kind = 'archive'")}


def test_the_sample_archive(conn: sqlite3.Connection, archive: Path) -> None:
    report = index_paths(conn, [archive])
    assert report.roots[0]["kind"] == "archive"
    assert report.skipped == []
    docs = _docs(conn)
    assert sorted(docs) == [f"chat-00{i}" for i in range(1, 7)]
    chat = docs["chat-001"]
    assert (chat["title"], chat["platform"], chat["date"]) == (
        "ChatGPT rate limits on the team plan",
        "chatgpt",
        "2025-09-03",  # a date stays a date
    )
    meta = json.loads(chat["meta"])
    assert meta["model"] == "gpt-4o"  # an unknown column, kept
    assert (meta["message_count"], meta["chunk_count"], meta["has_decisions"], meta["has_procedures"]) == (
        14,
        3,
        True,
        False,
    )
    assert json.loads(chat["topics"]) == ["rate limits", "429 errors", "batch jobs", "backoff"]
    chunks = conn.execute(
        "SELECT seq, meta FROM chunks WHERE document_id = ? ORDER BY seq", (chat["id"],)
    ).fetchall()
    assert [json.loads(c["meta"])["file"] for c in chunks] == [f"chunks/chat-001-{i}.md" for i in range(3)]
    # only the index file is a source file: the archive is one unit
    assert [r[0] for r in conn.execute("SELECT rel_path FROM files")] == ["chat_index.csv"]


def test_column_name_variants(conn: sqlite3.Connection, archive: Path) -> None:
    (archive / "chat_index.csv").write_text(
        "ID,Name,Source,Created_At\nchat-001,Renamed columns,claude,2025-09-03T10:00:00Z\n"
    )
    (archive / "all_topics.csv").write_text("keyword,conversation_id\nthrottling,chat-001\n")
    (archive / "condensed_index.csv").write_text("chat,part,file\nchat-001,0,chunks/chat-001-0.md\n")
    index_paths(conn, [archive])
    (doc,) = _docs(conn).values()
    assert (doc["title"], doc["platform"], json.loads(doc["topics"])) == (
        "Renamed columns",
        "claude",
        ["throttling"],
    )
    # without signal columns the signals come from the text
    assert json.loads(doc["meta"])["has_artifacts"] is False


@pytest.mark.parametrize(
    ("table", "content", "message"),
    [
        (
            "chat_index.csv",
            "chat_id,platform\nchat-001,x\n",
            "chat_index.csv: missing required column 'title'",
        ),
        ("all_topics.csv", "topic\nx\n", "all_topics.csv: missing required column 'chat_id'"),
        (
            "condensed_index.csv",
            "chat_id,chunk_index\nchat-001,0\n",
            "condensed_index.csv: missing required column 'path'",
        ),
    ],
)
def test_a_missing_column_fails_the_whole_archive_and_keeps_the_last_good_one(
    conn: sqlite3.Connection, archive: Path, table: str, content: str, message: str
) -> None:
    index_paths(conn, [archive])
    before = sorted(_docs(conn))
    (archive / table).write_text(content)
    report = index_paths(conn, [archive])
    assert len(report.skipped) == 1
    assert report.skipped[0].reason.startswith(message)
    assert report.skipped[0].reason.endswith("nothing of this archive was indexed")
    assert sorted(_docs(conn)) == before


def test_a_new_archive_with_a_missing_column_indexes_nothing(conn: sqlite3.Connection, archive: Path) -> None:
    (archive / "condensed_index.csv").write_text("chat_id\nchat-001\n")
    report = index_paths(conn, [archive])
    assert [s.reason.split(" (")[0] for s in report.skipped] == [
        "condensed_index.csv: missing required column 'path'"
    ]
    assert _docs(conn) == {}


def test_missing_chunk_files_are_reported_the_rest_indexed(conn: sqlite3.Connection, archive: Path) -> None:
    (archive / "chunks" / "chat-004-0.md").unlink()
    with open(archive / "condensed_index.csv", "a") as f:
        f.write("chat-006,1,../../notes/meeting-notes-2025-11-03.md,0\n")
    report = index_paths(conn, [archive])
    assert sorted((s.path.split("#")[1], s.reason) for s in report.skipped) == [
        ("chat-004", "no chunk file to index"),
        ("chat-004/chunks/chat-004-0.md", "chunk file is missing or unreadable"),
        ("chat-006/../../notes/meeting-notes-2025-11-03.md", "chunk file is outside the archive"),
    ]
    assert len(_docs(conn)) == 5


def test_latest_files_win(conn: sqlite3.Connection, archive: Path) -> None:
    (archive / "chat_index.latest.csv").write_text("chat_id,title\nchat-003,Newest title\n")
    index_paths(conn, [archive])
    assert [(k, d["title"]) for k, d in _docs(conn).items()] == [("chat-003", "Newest title")]


def test_a_changed_chunk_file_reindexes_the_archive(conn: sqlite3.Connection, archive: Path) -> None:
    index_paths(conn, [archive])
    chunk = archive / "chunks" / "chat-004-0.md"
    chunk.write_text(chunk.read_text() + "\nAdd rye flour for a sourer loaf.\n")
    report = index_changes(conn, [chunk])  # what the watcher hands over: a chunk file changed
    assert report.updated == 1
    assert [h.key for h in search(conn, "rye flour").hits] == ["chat-004"]
    chunk.write_text("Only pumpernickel now.\n")
    assert index_paths(conn, [archive]).updated == 1  # a full run sees it by the folder's stat
    assert [h.key for h in search(conn, "pumpernickel").hits] == ["chat-004"]
    assert index_paths(conn, [archive]).unchanged == 1


def test_an_archive_inside_a_folder_of_chats(conn: sqlite3.Connection, sample_copy: Path) -> None:
    index_paths(conn, [sample_copy / "chats"])
    kinds = dict(conn.execute("SELECT kind, count(*) FROM documents GROUP BY kind").fetchall())
    assert kinds == {"archive": 6, "chatgpt": 1}
    shutil.rmtree(sample_copy / "chats" / "archive")
    index_changes(conn, [sample_copy / "chats" / "archive"])
    assert dict(conn.execute("SELECT kind, count(*) FROM documents GROUP BY kind").fetchall()) == {
        "chatgpt": 1
    }
