"""The memory kind on real mnemonic and MIF files (../shared/data/mnemonic, MIT)."""

import json
import sqlite3
from pathlib import Path

from memdex.ingest.pipeline import index_paths


def _doc(conn: sqlite3.Connection, key: str) -> sqlite3.Row:
    row = conn.execute("SELECT * FROM documents WHERE key = ?", (key,)).fetchone()
    assert row is not None, f"no document {key}"
    return row


def test_mnemonic_fixtures(conn: sqlite3.Connection, shared_data: Path) -> None:
    root = shared_data / "mnemonic" / "fixtures" / "tests" / "fixtures" / "memories"
    report = index_paths(conn, [root])
    assert report.skipped == []
    assert report.added == 11
    doc = _doc(conn, "550e8400-e29b-41d4-a716-446655440003")
    assert doc["kind"] == "memory"
    assert doc["title"] == "Learning: Memory Systems in AI"
    assert doc["type"] == "semantic"
    assert doc["namespace"] == "learnings/project"
    assert json.loads(doc["tags"]) == ["research", "ai", "memory"]
    assert doc["created"] == "2026-01-24T10:30:00Z"
    meta = json.loads(doc["meta"])
    assert meta["citations"][0]["title"] == "MemGPT: Towards LLMs as Operating Systems"
    assert meta["provenance"]["confidence"] == 0.85
    # A memory missing fields the MIF validator requires is still indexed: memdex reads, it does not validate.
    assert _doc(conn, "550e8400-e29b-41d4-a716-446655440004")["type"] is None


def test_mif_examples_namespace_aliases_and_slug_ids(conn: sqlite3.Connection, shared_data: Path) -> None:
    index_paths(conn, [shared_data / "mnemonic" / "mif-examples"])
    react = _doc(conn, "decision-react-frontend")
    assert react["title"] == "Use React for Dashboard Frontend"
    topics = {r[0] for r in conn.execute("SELECT topic FROM topics WHERE document_id = ?", (react["id"],))}
    assert {"React Decision", "Frontend Framework Choice", "frontend"} <= topics
    minimal = _doc(conn, "550e8400-e29b-41d4-a716-446655440000")
    assert minimal["namespace"] == "_semantic/preferences"
    assert minimal["title"] == "level-1-minimal"  # no title, no heading: the file name
    # .memory.json twins are not memories of their own
    assert conn.execute("SELECT count(*) FROM files WHERE path LIKE '%.json'").fetchone()[0] == 0


def test_namespace_from_folder_when_absent(conn: sqlite3.Connection, tmp_path: Path) -> None:
    root = tmp_path / "mem"
    (root / "decisions" / "user").mkdir(parents=True)
    (root / "decisions" / "user" / "x.memory.md").write_text("---\nid: x1\ntitle: X\n---\nbody\n")
    (root / "readme.md").write_text("# Readme\n")
    index_paths(conn, [root], scope="user")
    x = _doc(conn, "x1")
    assert (x["kind"], x["namespace"], x["scope"]) == ("memory", "decisions/user", "user")
    assert _doc(conn, "readme.md")["kind"] == "note"


def test_scope_is_project_inside_a_git_work_tree(conn: sqlite3.Connection, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "mem").mkdir()
    (repo / "mem" / "a.memory.md").write_text("---\nid: a\n---\nA\n")
    (repo / ".git" / "HEAD.md").write_text("never indexed: .git is ignored\n")
    index_paths(conn, [repo])
    assert _doc(conn, "a")["scope"] == "project"
    assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 1
