"""Every door asks the same way and gets the same hits (issue 36).

Previously ``resume`` was filled by the command line and MCP alone (not by ``--batch``,
Datasette, the demo or ``memdex.search``, now ``memdex.Index``), batch marked deleted sources a second time, and the
Datasette plugin wrote a third JSON shape for a result. Now one search makes every hit, marks
and all (``query.marks``), and one serializer writes it (``Hit.to_dict``)."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import memdex
from memdex.doors.cli import cli
from memdex.doors.mcp_server import Tools
from memdex.ingest.pipeline import index_paths
from memdex.store import db

from .conftest import shared

QUERY = "CLAUDE.md architecture"
OPTIONS: dict[str, Any] = {"limit": 5, "use_synonyms": False, "patterns": False}


@pytest.fixture
def world(sample: sqlite3.Connection, db_path: Path, tmp_path: Path) -> Path:
    "The sample corpus and a real Claude Code session (which resumes), indexed."
    sessions = tmp_path / "projects"
    shutil.copytree(shared("chats", "claude-code", "chiphuyen-sniffly"), sessions / "chip")
    index_paths(sample, [sessions])
    return db_path


def _cli(db_path: Path, *args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, ["--db", str(db_path), *args], input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_command_line_a_batch_mcp_and_python_give_the_same_results(world: Path) -> None:
    by_cli = json.loads(_cli(world, "search", QUERY, "-n", "5", "--no-synonyms", "--no-patterns", "--json"))
    line = json.dumps({"id": 1, "query": QUERY, **OPTIONS})
    by_batch = json.loads(_cli(world, "search", "--batch", "-", input=line))
    mcp = Tools(world).search_knowledge_base(
        QUERY, mode="search", max_results=5, use_synonyms=False, patterns=False
    )
    by_mcp = json.loads(mcp.content[0].text)  # type: ignore[union-attr]
    with memdex.Index(world) as index:
        by_python = [h.to_dict() for h in index.search(QUERY, **OPTIONS).hits]
    assert by_cli["results"], "the query finds something"
    assert any(r["resume"] for r in by_cli["results"]), "a session among them says how to resume it"
    assert by_batch["results"] == by_cli["results"] == by_mcp["results"] == json.loads(json.dumps(by_python))


def test_datasette_writes_a_result_as_every_door_does(world: Path) -> None:
    from memdex.doors.datasette_plugin import search_json

    conn = db.connect(world, readonly=True)
    by_cli = json.loads(_cli(world, "search", QUERY, "--json"))["results"]
    assert json.loads(search_json(conn, QUERY, 10)) == by_cli
