"""The text kind: plain .txt, .text, .rst and .org files are searched as ripgrep would (issue 26)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.ingest import sources, traits_of
from memdex.ingest.kinds.plain import parse_plain
from memdex.ingest.pipeline import index_paths
from memdex.query.documents import get_document
from memdex.query.search import search

RST = """\
==============
Deploy runbook
==============

:date: 2025-03-04

How we rotate the deploy keys.
Every month, without fail.

Rotation
--------

Generate a new key with ssh-keygen.

Revoke the old one.

Rollback
--------

Keep the old key for a day.
"""

ORG = """\
#+TITLE: Garden log
#+FILETAGS: :garden:roses:
#+DATE: <2025-06-01 Sun>

* Roses                                                             :flowers:
Pruned the roses back hard.
** Pests
Aphids on the climbing rose again.
* Vegetables
Beans are up.
"""


def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    (root / "ops").mkdir(parents=True)
    (root / "ops" / "runbook.rst").write_text(RST)
    (root / "garden.org").write_text(ORG)
    (root / "2025-09-22 standup.txt").write_text(
        "Talked about the avocet survey.\nCounts are up.\n\nNext: ring the chicks.\n"
    )
    (root / "todo.text").write_text("buy avocet field guide\n")
    return root


def test_plain_text_files_are_indexed_and_found(conn: sqlite3.Connection, tmp_path: Path) -> None:
    root = corpus(tmp_path)
    report = index_paths(conn, [root])
    assert (report.added, report.documents, report.skipped) == (4, 4, [])
    hits = search(conn, "avocet", limit=5).hits
    assert {(h.title, h.kind) for h in hits} == {("2025-09-22 standup", "text"), ("todo", "text")}
    standup = next(h for h in hits if h.title == "2025-09-22 standup")
    assert (standup.date, standup.date_source) == ("2025-09-22", "file name")
    assert standup.location.endswith("2025-09-22 standup.txt:1-4")


def test_an_rst_file_is_titled_and_cut_at_its_sections(conn: sqlite3.Connection, tmp_path: Path) -> None:
    root = corpus(tmp_path)
    index_paths(conn, [root])
    hits = search(conn, "ssh-keygen", granularity="chunk", limit=3).hits
    top = hits[0]
    assert (top.title, top.heading, top.namespace) == ("Deploy runbook", "Deploy runbook > Rotation", "ops")
    assert (top.date, top.date_source) == ("2025-03-04", "text")
    lines = RST.splitlines()
    assert (top.line_start, top.line_end) == (10, 15)
    assert lines[top.line_start - 1] == "Rotation" and lines[top.line_end - 1] == "Revoke the old one."
    # memdex show reads the file itself, with its own line numbers
    doc = get_document(conn, top.id, line_start=top.line_start, line_end=top.line_end)
    assert doc["read_from"] == "file" and doc["text"] == "\n".join(lines[9:15]) + "\n"


def test_an_org_file_has_its_title_tags_date_and_headings(conn: sqlite3.Connection, tmp_path: Path) -> None:
    index_paths(conn, [corpus(tmp_path)])
    hit = search(conn, "aphids", granularity="chunk", limit=1).hits[0]
    assert (hit.title, hit.heading) == ("Garden log", "Garden log > Roses > Pests")
    assert hit.tags == ["garden", "roses"] and (hit.date, hit.date_source) == ("2025-06-01", "text")
    assert search(conn, "roses", limit=1).hits[0].match_layer == 1  # its tags are topics


def test_paragraphs_are_packed_up_to_the_chunk_bound_with_their_lines() -> None:
    paragraphs = [f"Paragraph {i}" + " word" * 60 for i in range(12)]  # ~310 bytes each
    text = "\n\n".join(paragraphs) + "\n"
    doc = parse_plain(text, "long.txt", kind="text", size_bytes=len(text), max_tokens=250)
    assert doc.title == "long" and len(doc.chunks) == 4  # three paragraphs fit in 1,000 bytes
    lines = text.splitlines()
    for chunk in doc.chunks:
        assert len(chunk.text.encode()) <= 250 * 4
        assert chunk.text == "\n".join(lines[chunk.line_start - 1 : chunk.line_end])
        assert chunk.text.startswith("Paragraph ")  # cut between paragraphs, not inside one
    assert [c.line_start for c in doc.chunks] == [1, 7, 13, 19]


def test_a_title_line_needs_its_underline_and_a_blank_line_before_it() -> None:
    def title(text: str, name: str = "n.txt") -> str:
        return parse_plain(text, name, kind="text", size_bytes=len(text)).title

    assert title("Shopping\n========\n\neggs\n") == "Shopping"
    assert title("eggs\nmilk\n----\n") == "n"  # a rule under a paragraph line, not a title
    assert title("* not a heading in a .txt\n") == "n"
    assert title("* Heading\n", "n.org") == "Heading"
    assert title("a = b\n===\n") == "a = b"


def test_binary_and_non_utf8_files_are_reported_and_skipped(conn: sqlite3.Connection, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "blob.txt").write_bytes(b"\x00\x01\x02binary")
    (root / "latin.txt").write_bytes(b"caf\xe9\n")
    (root / "ok.txt").write_text("fine\n")
    report = index_paths(conn, [root])
    reasons = {Path(s.path).name: s.reason for s in report.skipped}
    assert reasons == {
        "blob.txt": "binary file (it contains NUL bytes), not text",
        "latin.txt": "not valid UTF-8 (byte 3 is 0xe9); convert the file to UTF-8 to index it",
    }
    assert report.added == 1


def test_memdex_kinds_lists_it_and_the_cli_indexes_it(tmp_path: Path, db_path: Path) -> None:
    assert traits_of("text").one_document_per_file and sources()["text"].claims("a/b/notes.RST")
    run = CliRunner()
    listed = run.invoke(cli, ["kinds"])
    lines = [line.split(maxsplit=1) for line in listed.stdout.splitlines()]
    assert listed.exit_code == 0 and ["text", sources()["text"].description] in lines
    assert sources()["text"].description.startswith("plain text (*.txt, *.text, *.rst, *.org)")
    root = corpus(tmp_path)
    assert run.invoke(cli, ["--db", str(db_path), "index", str(root)]).exit_code == 0
    out = run.invoke(cli, ["--db", str(db_path), "search", "aphids", "--kind", "text", "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["results"][0]["title"] == "Garden log"
