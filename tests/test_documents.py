"""memdex show / get_document: reading what a search found, by id, path or key."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.errors import InvalidParameter
from memdex.query.cascade import search
from memdex.store.documents import DocumentNotFound, get_document


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
    with pytest.raises(InvalidParameter, match=r"holds 6 documents; give one id: \d+ \(ChatGPT rate limits"):
        get_document(sample, str(sample_copy / "chats" / "archive" / "chat_index.csv"))


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
