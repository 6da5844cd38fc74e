"""The serena kind on both real layouts in ../shared/data (MIT, rjmurillo/ai-agents)."""

import json
import sqlite3
from pathlib import Path

import pytest

from memdex.ingest.kinds.serena import parse_index
from memdex.ingest.pipeline import index_paths
from memdex.ingest.serena_index import table_cells


def _topics(conn: sqlite3.Connection, key: str) -> list[str]:
    row = conn.execute("SELECT topics FROM documents WHERE key = ?", (key,)).fetchone()
    assert row is not None, f"no document {key}"
    return json.loads(row[0])


def test_nested_layout(serena: sqlite3.Connection, shared_data: Path) -> None:
    root = shared_data / "serena-memories"
    index_files = {p.name for p in root.glob("*-index.md")}
    assert len(index_files) == 44
    docs = {r[0] for r in serena.execute("SELECT key FROM documents")}
    # Index files are structure, not results; every atomic file is a document keyed by its Serena name.
    assert not docs & {name[:-3] for name in index_files}
    assert "copilot/copilot-platform-priority" in docs
    assert len(docs) == len(list(root.rglob("*.md"))) - len(index_files)
    assert serena.execute("SELECT count(*) FROM ingest_errors").fetchone()[0] == 0


def test_domain_index_keywords_become_topics(serena: sqlite3.Connection) -> None:
    topics = _topics(serena, "copilot-disable-all-hooks-windows")
    assert topics == ["disableAllHooks", "Windows", "trusted-worktree", "probe", "hook-suppression", "1.0.70"]
    row = serena.execute(
        "SELECT t.source, f.rel_path, t.line FROM topics t JOIN files f ON f.id = t.source_file_id "
        "JOIN documents d ON d.id = t.document_id WHERE d.key = ? AND t.topic = 'probe'",
        ("copilot-disable-all-hooks-windows",),
    ).fetchone()
    assert tuple(row) == ("index", "skills-copilot-index.md", 13)


def test_memory_index_line_form_rows_become_topics(serena: sqlite3.Connection) -> None:
    topics = _topics(serena, "decision-frontmatter-migrations-must-cover-both-key-shapes")
    assert {"frontmatter", "migration", "bulk", "rename"} <= set(topics)


def test_files_in_no_index_have_no_index_topics(serena: sqlite3.Connection) -> None:
    unreached = serena.execute(
        "SELECT count(*) FROM documents d WHERE d.kind = 'serena' AND NOT EXISTS "
        "(SELECT 1 FROM topics t WHERE t.document_id = d.id AND t.source = 'index')"
    ).fetchone()[0]
    assert 370 <= unreached <= 380  # SOURCES.md: 376 files are in no index (docs/measured.md too)


@pytest.mark.slow
def test_flat_layout(conn: sqlite3.Connection, shared_data: Path) -> None:
    root = shared_data / "serena-memories-flat"
    report = index_paths(conn, [root])
    assert sorted(Path(s.path).name for s in report.skipped) == [
        "adr-014-findings.md",
        "adr-019-quantitative-analysis.md",
        "bounded-contexts.md",
    ]
    assert {s.reason for s in report.skipped} == {"empty file"}
    # The table form of memory-index.md: every link in it is a row (counted here independently).
    rows = [ln for ln in (root / "memory-index.md").read_text().splitlines() if ln.startswith("|")]
    written = sum(ln.count("](") for ln in rows)
    read = conn.execute(
        "SELECT count(*) FROM index_links l JOIN files f ON f.id = l.file_id "
        "WHERE f.rel_path = 'memory-index.md'"
    ).fetchone()[0]
    assert read == written > 60
    dangling = conn.execute(
        "SELECT count(*) FROM index_links l WHERE NOT EXISTS (SELECT 1 FROM files f WHERE f.path = l.target)"
    ).fetchone()[0]
    assert dangling == 0
    assert "disableAllHooks" not in json.dumps(_topics(conn, "copilot-follow-up-pr"))
    assert "duplicate" in _topics(conn, "copilot-follow-up-pr")
    # The five-column skills-serena-index.md is no keyword index: its content stays searchable.
    assert conn.execute("SELECT 1 FROM documents WHERE key = 'skills-serena-index'").fetchone()


def test_table_cells_keep_escaped_pipes() -> None:
    assert table_cells(r"| a \| b | [x](x.md) |") == [r"a \| b", "[x](x.md)"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("| Keywords | File |\n|---|---|\n| alpha beta | [a](a.md) |\n", [(3, ["alpha", "beta"], "a.md")]),
        (
            "| Keywords | File |\n|---|---|\n| alpha | a |\n| beta | `b.md` |\n",
            [(3, ["alpha"], "a.md"), (4, ["beta"], "b.md")],
        ),
        (
            "# Index\n[Section]\n|one two: [a](a.md) (12), [b](sub/b.md) (3)\n",
            [(3, ["one", "two"], "a.md"), (3, ["one", "two"], "sub/b.md")],
        ),
        ("| Principle | Application |\n|---|---|\n| Coherence | Technology and organization |\n", []),
        (
            "| Task Keywords | Essential Memories |\n|---|---|\n| x y | [a](a.md) (10), [b](b.md) (2) |\n",
            [(3, ["x", "y"], "a.md"), (3, ["x", "y"], "b.md")],
        ),
        ("| ID | Name | Category | Impact | Status |\n|--|--|--|--|--|\n| s-1 | n | c | i | s |\n", []),
    ],
)
def test_parse_index_forms(tmp_path: Path, text: str, expected: list[tuple[int, list[str], str]]) -> None:
    for name in ("a.md", "b.md"):
        (tmp_path / name).write_text("x")
    links = parse_index(text, tmp_path / "x-index.md", tmp_path)
    got = [(ln.line, ln.keywords, str(Path(ln.target).relative_to(tmp_path))) for ln in links]
    assert got == expected


def test_editing_an_index_changes_the_topics_of_its_targets(
    conn: sqlite3.Connection, sample_copy: Path
) -> None:
    root = sample_copy / "serena"
    index_paths(conn, [root])
    assert "rerere" in _topics(conn, "git/git-rebase-conflicts")
    index = root / "skills-git-index.md"
    index.write_text(index.read_text().replace("rerere", "replay-resolutions"))
    index_paths(conn, [root])
    topics = _topics(conn, "git/git-rebase-conflicts")
    assert "replay-resolutions" in topics and "rerere" not in topics
    index.unlink()
    index_paths(conn, [root])
    assert _topics(conn, "git/git-rebase-conflicts") == []


def test_a_serena_folder_inside_a_plain_root_is_found(
    conn: sqlite3.Connection, tmp_path: Path, sample_copy: Path
) -> None:
    repo = tmp_path / "repo"
    (repo / ".serena").mkdir(parents=True)
    (sample_copy / "serena").rename(repo / ".serena" / "memories")
    (repo / "NOTES.md").write_text("# Notes\n")
    index_paths(conn, [repo])
    kinds = dict(conn.execute("SELECT key, kind FROM documents").fetchall())
    assert kinds["git/git-worktree-cleanup"] == "serena"
    assert kinds["NOTES.md"] == "note"
    assert "prune" in _topics(conn, "git/git-worktree-cleanup")
