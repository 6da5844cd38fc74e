"""memdex show / get_document: reading what a search found, by id, path or key."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.errors import InvalidParameter
from memdex.ingest.pipeline import index_paths
from memdex.query.documents import DocumentNotFound, get_document
from memdex.query.search import search


def test_a_result_line_range_reads_those_lines_of_the_file(sample: sqlite3.Connection) -> None:
    hit = search(sample, "deploy key rotation", limit=1).hits[0]
    doc = get_document(sample, hit.id, line_start=hit.line_start, line_end=hit.line_end)
    lines = Path(hit.path).read_text().splitlines(keepends=True)
    assert doc["text"] == "".join(lines[hit.line_start - 1 : hit.line_end])
    assert doc["read_from"] == "file" and doc["total_lines"] == len(lines)
    assert (doc["line_start"], doc["line_end"], doc["next_line"]) == (hit.line_start, hit.line_end, None)


def test_ids_paths_and_keys_name_the_same_document(sample: sqlite3.Connection) -> None:
    hit = search(sample, "deploy key rotation", limit=1).hits[0]
    by_id = get_document(sample, hit.id)
    assert get_document(sample, str(hit.id)) == by_id
    assert get_document(sample, hit.path) == by_id
    assert get_document(sample, hit.key) == by_id


def test_a_token_budget_stops_at_a_line_and_says_where_to_go_on(sample: sqlite3.Connection) -> None:
    hit = search(sample, "deploy key rotation", limit=1).hits[0]
    doc = get_document(sample, hit.id, max_tokens=40)
    assert doc["truncated"] and doc["est_tokens"] <= 40 and doc["text"].endswith("\n")
    rest = get_document(sample, hit.id, line_start=doc["next_line"])
    assert doc["text"] + rest["text"] == Path(hit.path).read_text()


def test_a_conversation_is_read_from_the_index_by_messages(sample: sqlite3.Connection) -> None:
    hit = search(sample, "rewrites my query with CTEs", limit=1, filters=None).hits[0]
    assert hit.kind == "chatgpt"
    doc = get_document(sample, hit.id)
    assert doc["read_from"] == "index"
    assert doc["text"].startswith("--- messages 1-4 ---\nUser: Every time I ask ChatGPT")


def test_an_export_holding_many_conversations_asks_for_an_id(
    sample: sqlite3.Connection, sample_copy: Path
) -> None:
    index = str(sample_copy / "chats" / "archive" / "chat_index.csv")
    with pytest.raises(
        InvalidParameter,
        match=r"holds 6 documents; give one id, or .*chat_index.csv#KEY: \d+ \(ChatGPT rate limits on "
        r"the team plan; key chat-001\)",
    ):
        get_document(sample, index)
    assert get_document(sample, f"{index}#chat-001")["title"] == "ChatGPT rate limits on the team plan"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"line_start": 0}, "line_start must be 1 or more"),
        ({"line_start": 5, "line_end": 2}, "line_end 2 is before line_start 5"),
        ({"line_start": 10_000}, "is past the end"),
        ({"max_tokens": 0}, "max_tokens must be 1 or more"),
    ],
)
def test_bad_ranges_are_clear_errors(sample: sqlite3.Connection, kwargs: dict, message: str) -> None:
    hit = search(sample, "deploy key rotation", limit=1).hits[0]
    with pytest.raises(InvalidParameter, match=message):
        get_document(sample, hit.id, **kwargs)


def test_unknown_references_say_what_to_give(sample: sqlite3.Connection) -> None:
    with pytest.raises(DocumentNotFound, match="No document has id 99999"):
        get_document(sample, 99999)
    with pytest.raises(DocumentNotFound, match="give an id or a path from search results"):
        get_document(sample, "/etc/passwd")


def test_a_file_swapped_for_a_symlink_out_of_the_roots_is_not_read(
    sample: sqlite3.Connection, sample_copy: Path, tmp_path: Path
) -> None:
    hit = search(sample, "deploy key rotation", limit=1).hits[0]
    secret = tmp_path / "secret.txt"
    secret.write_text("private\n")
    Path(hit.path).unlink()
    Path(hit.path).symlink_to(secret)
    with pytest.raises(InvalidParameter, match="outside the indexed roots"):
        get_document(sample, hit.id)


def test_a_deleted_file_is_read_from_the_index(sample: sqlite3.Connection) -> None:
    hit = search(sample, "deploy key rotation", limit=1).hits[0]
    Path(hit.path).unlink()
    doc = get_document(sample, hit.id)
    assert doc["read_from"] == "index" and "ssh-keygen" in doc["text"]


def test_show_on_the_command_line(sample: sqlite3.Connection, db_path: Path) -> None:
    hit = search(sample, "deploy key rotation", limit=1).hits[0]
    run = CliRunner()
    out = run.invoke(
        cli, ["--db", str(db_path), "show", str(hit.id), "--lines", f"{hit.line_start}-{hit.line_end}"]
    )
    assert out.exit_code == 0 and "ssh-keygen" in out.stdout
    more = run.invoke(cli, ["--db", str(db_path), "show", str(hit.id), "--max-tokens", "30"])
    assert f"more: memdex show {hit.id} --lines " in more.stderr
    data = json.loads(run.invoke(cli, ["--db", str(db_path), "show", hit.key, "--json"]).stdout)
    assert data["id"] == hit.id and data["text"]
    bad = run.invoke(cli, ["--db", str(db_path), "show", "1", "--lines", "x-y"])
    assert bad.exit_code == 2 and "is not a line range" in bad.stderr
    missing = run.invoke(cli, ["--db", str(db_path), "show", "424242"])
    assert missing.exit_code == 1 and "No document has id 424242" in missing.stderr


# -- every form a result prints names its document (issue 26) ----------------------------------
def _read_line(db_path: Path, query: str, *options: str) -> str:
    "What a search's text output prints after ``read:`` for its first result."
    out = CliRunner().invoke(cli, ["--db", str(db_path), "search", query, "--limit", "1", *options])
    assert out.exit_code == 0, out.output
    return next(line for line in out.stdout.splitlines() if line.startswith("    read: "))[10:]


def _show(db_path: Path, ref: str) -> dict:
    out = CliRunner().invoke(cli, ["--db", str(db_path), "show", ref, "--json"])
    assert out.exit_code == 0, out.output
    return json.loads(out.stdout)


def test_show_takes_what_a_search_printed(
    sample: sqlite3.Connection,
    sample_copy: Path,
    db_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hit = search(sample, "deploy key rotation", limit=1).hits[0]
    lines = Path(hit.path).read_text().splitlines(keepends=True)
    wanted = "".join(lines[hit.line_start - 1 : hit.line_end])
    read = _read_line(db_path, "deploy key rotation")
    assert read == f"{hit.path}:{hit.line_start}-{hit.line_end}"
    doc = _show(db_path, read)  # path:lines reads those lines
    assert (doc["id"], doc["text"], doc["line_start"], doc["line_end"]) == (
        hit.id,
        wanted,
        hit.line_start,
        hit.line_end,
    )
    text = CliRunner().invoke(cli, ["--db", str(db_path), "show", read])
    assert text.exit_code == 0 and text.stdout == wanted
    # --lines says which lines, over the reference's own
    over = CliRunner().invoke(cli, ["--db", str(db_path), "show", read, "--lines", "1-2", "--json"])
    assert json.loads(over.stdout)["text"] == "".join(lines[:2])
    # the key and chat_id, the path, relative to the current folder, through a symlink, resolved
    data = json.loads(
        CliRunner().invoke(cli, ["--db", str(db_path), "search", "deploy key rotation", "--json"]).stdout
    )
    top = data["results"][0]
    monkeypatch.chdir(sample_copy / "memories")
    relative = os.path.relpath(hit.path)
    link = tmp_path / "linked"
    link.symlink_to(sample_copy)
    through_link = str(link / Path(hit.path).relative_to(sample_copy))
    for ref in (
        top["chat_id"],
        top["key"],
        hit.path,
        relative,
        f"{relative}:{hit.line_start}-{hit.line_end}",
        through_link,
    ):
        assert _show(db_path, ref)["id"] == hit.id, ref
    assert not relative.startswith("/") and _show(db_path, relative)["text"] == "".join(lines)


def test_show_takes_a_path_through_a_symlink_or_resolved_past_one(
    conn: sqlite3.Connection, tmp_path: Path, db_path: Path
) -> None:
    real = tmp_path / "real-notes"
    real.mkdir()
    (real / "heron.md").write_text("# Herons\n\nGrey herons nest early.\n")
    link = tmp_path / "notes"
    link.symlink_to(real)
    index_paths(conn, [link])
    (stored,) = [r[0] for r in conn.execute("SELECT path FROM files")]
    for ref in (link / "heron.md", real / "heron.md"):  # whichever the index holds, and the other
        doc = _show(db_path, f"{ref}:3-3")
        assert (doc["path"], doc["text"]) == (stored, "Grey herons nest early.\n")


def test_show_takes_a_conversations_location_and_an_archives_chunk_file(
    sample: sqlite3.Connection, db_path: Path
) -> None:
    read = _read_line(db_path, "rewrites my query with CTEs", "--granularity", "chunk")
    assert read.endswith("conversations.json (messages 1-3)")
    doc = _show(db_path, read)
    assert doc["kind"] == "chatgpt" and doc["text"].startswith("--- messages 1-4 ---\nUser: Every time I ask")
    assert doc["line_start"] == 1 and doc["next_line"] is None
    chunk_file = _read_line(db_path, "429 rate limit")
    assert chunk_file.endswith("archive/chunks/chat-001-0.md")
    doc = _show(db_path, chunk_file)
    assert doc["title"] == "ChatGPT rate limits on the team plan"
    assert doc["text"].strip() == Path(chunk_file).read_text().strip()  # that chunk, not the chat


@pytest.mark.slow
def test_get_document_over_mcp_takes_the_same_forms(sample: sqlite3.Connection, db_path: Path) -> None:
    from .test_mcp import over_stdio

    hit = search(sample, "deploy key rotation", limit=1).hits[0]
    read = _read_line(db_path, "deploy key rotation")
    chat = _read_line(db_path, "rewrites my query with CTEs", "--granularity", "chunk")
    calls = [("get_document", {"path": ref}) for ref in (read, hit.key, chat)]
    out = [c for c in over_stdio(db_path, calls)["calls"]]
    assert not any(c["error"] for c in out), out
    first, by_key, conversation = (c["data"] for c in out)
    assert (first["id"], first["line_start"], first["line_end"]) == (hit.id, hit.line_start, hit.line_end)
    assert by_key["id"] == hit.id and by_key["line_start"] == 1
    assert conversation["kind"] == "chatgpt" and conversation["text"].startswith("--- messages 1-4 ---")


def test_a_relative_path_is_the_file_here_not_another_roots_same_key(
    conn: sqlite3.Connection, tmp_path: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("work", "home"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "todo.md").write_text(f"# Todo\n\n{name} things\n")
    index_paths(conn, [tmp_path / "work", tmp_path / "home"])  # both notes are keyed todo.md
    for here in ("work", "home"):
        monkeypatch.chdir(tmp_path / here)
        assert _show(db_path, "todo.md")["text"].endswith(f"{here} things\n")
        assert _show(db_path, "todo.md:3-3")["text"] == f"{here} things\n"


@pytest.mark.parametrize(
    "export",
    [
        ("chatgpt", "chatlore", "conversations.json"),
        ("chatgpt", "quentinous-chatgpt-export-studio", "conversations.json"),
        ("claude", "chatlore", "conversations.json"),
        ("claude", "osteele-claude-chat-viewer", "testdata", "conversations.json"),
    ],
    ids=lambda parts: "/".join(parts[:2]),
)
def test_show_takes_every_read_line_of_a_real_export_of_many_conversations(
    conn: sqlite3.Connection,
    tmp_path: Path,
    db_path: Path,
    export: tuple[str, ...],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    "Previously a read: line of an export holding many conversations was refused: 'holds 2 documents'."
    from .conftest import shared

    folder = tmp_path / "exports" / export[0]
    folder.mkdir(parents=True)
    copy = folder / "conversations.json"
    copy.write_bytes(shared("chats", *export).read_bytes())
    index_paths(conn, [folder])
    docs = conn.execute(
        "SELECT d.id, d.key, d.title FROM documents d JOIN files f ON f.id = d.file_id WHERE f.path = ?",
        (str(copy),),
    ).fetchall()
    assert len(docs) >= 2, docs  # many conversations in one file: the case at hand
    for doc_id, key, title in docs:
        seen = 0
        for granularity in ("chat", "chunk"):
            printed = CliRunner().invoke(
                cli, ["--db", str(db_path), "search", title, "--granularity", granularity, "--limit", "20"]
            )
            assert printed.exit_code == 0, printed.output
            reads = [line.split("read: ", 1)[1] for line in printed.stdout.splitlines() if "read: " in line]
            for read in reads:  # pasted as printed, every one names one conversation
                assert read.startswith(f"{copy}#"), read
                shown = _show(db_path, read)
                assert read.startswith(f"{copy}#{shown['key']}") and shown["path"] == str(copy)
                seen += shown["id"] == doc_id
        assert seen, f"no read: line of {title!r} named it"
        # the text shown without --json is that conversation's, the key through a relative path too
        plain = CliRunner().invoke(cli, ["--db", str(db_path), "show", f"{copy}#{key}"])
        assert plain.exit_code == 0 and plain.stdout == get_document(conn, doc_id)["text"]
    monkeypatch.chdir(tmp_path)
    relative = os.path.relpath(copy)
    assert _show(db_path, f"{relative}#{docs[1][1]}")["id"] == docs[1][0]
    # the bare path still asks which, and says how to name one
    bare = CliRunner().invoke(cli, ["--db", str(db_path), "show", f"{copy} (messages 1-2)"])
    assert bare.exit_code == 2 and f"give one id, or {copy}#KEY" in bare.stderr


def test_a_file_with_a_hash_in_its_name_is_still_named_by_its_path(
    conn: sqlite3.Connection, tmp_path: Path, db_path: Path
) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "C#-tips.md").write_text("# C# tips\n\nPrefer records for value objects.\n")
    index_paths(conn, [notes])
    for ref in (f"{notes}/C#-tips.md", f"{notes}/C#-tips.md:3-3"):
        assert _show(db_path, ref)["title"] == "C# tips", ref
