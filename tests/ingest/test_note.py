"""A note whose YAML header is broken keeps its body: indexed as text, the header reported (#26)."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db

BROKEN = "---\ntitle: Heron survey\ndate: 2025-04-02\ntags: [birds\n---\n# Heron survey\n\nEleven grey herons at the weir.\n"


def titles(conn: sqlite3.Connection, query: str) -> list[str]:
    return [h.title for h in search(conn, query, limit=5).hits]


def test_a_note_with_a_broken_header_is_indexed_and_the_header_reported(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    note = root / "herons.md"
    note.write_text(BROKEN)
    report = index_paths(conn, [root])
    assert report.added == 1 and report.documents == 1
    assert [(s.path, s.reason) for s in report.skipped] == [
        (
            f"{note}#frontmatter",
            "broken YAML frontmatter at line 4: expected ',' or ']', but got '<stream end>'; "
            "the note is indexed as text, without its fields",
        )
    ]
    hit = search(conn, "grey herons weir", limit=1).hits[0]
    assert (hit.title, hit.kind, hit.path) == ("Heron survey", "note", str(note))
    assert (hit.date, hit.date_source) == ("2025-04-02", "text")  # the header's date line, read as text
    assert hit.tags == []  # no fields from a block that does not parse
    assert (hit.line_start, hit.line_end) == (6, 8)  # the file's own lines
    header = conn.execute("SELECT text, line_start, line_end FROM chunks WHERE seq = 0").fetchone()
    assert tuple(header) == (BROKEN.split("\n# ")[0], 1, 5)  # the header, kept as text
    # reported again while it stays broken, and no more once it is fixed
    assert [s.path for s in index_paths(conn, [root]).skipped] == [f"{note}#frontmatter"]
    note.write_text(BROKEN.replace("[birds", "[birds]"))
    assert index_paths(conn, [root]).skipped == []
    assert search(conn, "grey herons weir", limit=1).hits[0].tags == ["birds"]


def test_the_cli_names_the_file_and_line_and_status_keeps_it(db_path: Path, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "herons.md").write_text(BROKEN)
    (root / "no-close.md").write_text("---\nA note that opens with a rule about egrets.\n")
    run = CliRunner()
    result = run.invoke(cli, ["--db", str(db_path), "index", str(root)])
    assert result.exit_code == 1 and "2 added" in result.stdout
    lines = result.stderr.splitlines()
    assert lines[0] == "Skipped 2 records:"
    assert f"  {root / 'herons.md'}#frontmatter: broken YAML frontmatter at line 4: " in "\n".join(lines)
    assert (
        f"  {root / 'no-close.md'}#frontmatter: frontmatter starts with --- but has no closing --- line; "
        "the note is indexed as text, without its fields" in lines
    )
    found = run.invoke(cli, ["--db", str(db_path), "search", "egrets"])
    assert found.exit_code == 0 and "no-close" in found.stdout
    status = run.invoke(cli, ["--db", str(db_path), "status"])
    assert f"{root / 'herons.md'}#frontmatter: broken YAML frontmatter at line 4" in status.stdout


def test_a_memory_with_a_broken_header_is_still_an_error(conn: sqlite3.Connection, tmp_path: Path) -> None:
    root = tmp_path / "memories"
    root.mkdir()
    memory = root / "herons.memory.md"
    memory.write_text(BROKEN)
    report = index_paths(conn, [root])
    assert report.added == 0 and [s.path for s in report.skipped] == [str(memory)]
    assert report.skipped[0].reason.startswith("broken YAML frontmatter at line 4: ")
    assert titles(conn, "grey herons") == []


def test_notes_skipped_for_a_broken_header_before_are_read_again(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "An index where an older memdex skipped the note, its stat recorded: migration 0008 retries it."
    root = tmp_path / "notes"
    root.mkdir()
    note = root / "herons.md"
    note.write_text(BROKEN)
    index_paths(conn, [root])
    st = os.stat(note)
    with conn:  # what an older memdex left: no document, an error with the file's stat
        conn.execute("DELETE FROM files")
        conn.execute("DELETE FROM ingest_errors")
        conn.execute(
            "INSERT INTO ingest_errors (path, root_id, reason, size, mtime_ns, first_seen, last_seen) "
            "SELECT ?, id, 'broken YAML frontmatter at line 4: expected', ?, ?, 'x', 'x' FROM roots",
            (str(note), st.st_size, st.st_mtime_ns),
        )
    assert [s.reason for s in index_paths(conn, [root]).skipped] == [
        "broken YAML frontmatter at line 4: expected"
    ]
    assert titles(conn, "grey herons") == []
    _, _, sql = next(m for m in db.migrations() if m[1] == "0008_retry_broken_frontmatter")
    with conn:
        for statement in db.statements(sql):
            conn.execute(statement)
    report = index_paths(conn, [root])
    assert [s.path for s in report.skipped] == [f"{note}#frontmatter"]
    assert titles(conn, "grey herons") == ["Heron survey"]
    assert conn.execute("SELECT count(*) FROM ingest_errors").fetchone()[0] == 0
