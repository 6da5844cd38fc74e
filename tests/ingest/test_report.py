"""Known and new problems (issue 26): a run fails for what it found, not for what an earlier
run found in files that have not changed since."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from click.testing import CliRunner, Result

from memdex.doors.cli import cli
from memdex.ingest.pipeline import index_paths


def run(db_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db_path), *args], catch_exceptions=False)


def _corpus(root: Path) -> None:
    "A good note, an empty file, a broken memory, one too big, and an export with a bad record."
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nAbout grebes.\n")
    (root / "empty.md").write_text("")
    (root / "broken.memory.md").write_text("---\ntitle: [oops\n---\n")
    (root / "big.md").write_text("# Big\n\n" + "x" * 6_000_000)  # over the 5 MB limit
    (root / "conversations.json").write_text(
        json.dumps(
            [
                {"id": "c1", "title": "Terns", "mapping": {"a": _message("a", "about terns")}},
                {"id": "c2", "title": "No mapping"},
            ]
        )
    )


def _message(node: str, text: str) -> dict[str, object]:
    return {
        "id": node,
        "parent": None,
        "children": [],
        "message": {
            "id": node,
            "author": {"role": "user"},
            "content": {"content_type": "text", "parts": [text]},
            "create_time": 1_700_000_000,
        },
    }


def test_a_problem_is_new_once_then_known_until_its_file_changes(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    root = tmp_path / "notes"
    _corpus(root)
    first = index_paths(conn, [root])
    names = {Path(s.file).name for s in first.skipped}
    assert names == {"empty.md", "broken.memory.md", "big.md", "conversations.json"}
    assert first.known_problems == []
    again = index_paths(conn, [root])
    # The same four: the size limit is checked every run (it is an option), and says the same.
    assert {Path(s.file).name for s in again.skipped} == names and again.new_problems == []
    (root / "empty.md").write_text("")  # the same bytes, a new stat: looked at again, and news
    os.utime(root / "empty.md", ns=(1, 1_000_000_000))
    third = index_paths(conn, [root])
    assert [(Path(s.path).name, s.reason) for s in third.new_problems] == [("empty.md", "empty file")]


def test_index_exits_0_once_problems_are_known_and_says_so_in_one_line(db_path: Path, tmp_path: Path) -> None:
    "Previously every run exited 1 and listed every old problem again, -q included."
    root = tmp_path / "notes"
    _corpus(root)
    first = run(db_path, "index", str(root))
    assert first.exit_code == 1
    assert first.stderr.splitlines()[0] == "Skipped 3 files and 1 record:"
    again = run(db_path, "index")
    assert again.exit_code == 0, again.output
    assert again.stdout.splitlines()[1].startswith("5 files: 0 added, 0 updated, 2 unchanged")
    assert ", 0 skipped" in again.stdout
    assert again.stderr == "4 files with known problems: `memdex status` lists them.\n"
    quiet = run(db_path, "index", "-q")
    assert (quiet.exit_code, quiet.output) == (0, "")
    (root / "worse.memory.md").write_text("---\ntags: [x\n---\n")  # a new problem
    new = run(db_path, "index", "-q")
    assert new.exit_code == 1
    assert new.stdout == "" and new.stderr.splitlines() == [
        "Skipped 1 file:",
        f"  {root / 'worse.memory.md'}: " + new.stderr.splitlines()[1].split(": ", 1)[1],
    ]
    report = json.loads(run(db_path, "index", "--json").stdout)
    assert {s["known"] for s in report["skipped"]} == {True}


def test_status_counts_every_problem_it_lists(db_path: Path, tmp_path: Path) -> None:
    "Previously `errors: 0` beside a list of records skipped inside indexed files."
    root = tmp_path / "chats"
    root.mkdir()
    (root / "conversations.json").write_text(
        json.dumps([{"id": "c1", "title": "T", "mapping": {"a": _message("a", "terns")}}, {"id": "c2"}])
    )
    run(db_path, "index", str(root))
    status = json.loads(run(db_path, "status", "--json").stdout)
    assert len(status["errors"]) == 1 and status["counts"]["errors"] == 1


def test_exit_codes_are_in_the_help() -> None:
    text = CliRunner().invoke(cli, ["index", "--help"]).stdout
    assert "Exit codes: 0 the run succeeded (known problems included); 1 it found new" in " ".join(
        text.split()
    )
