"""Every query in docs/sql.md runs as written on the sample corpus and returns rows."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "sql.md"
QUERIES = re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
MAY_BE_EMPTY = ("FROM ingest_errors",)  # the sample corpus has no broken files


def test_the_page_has_the_queries_the_issue_asks_for() -> None:
    text = DOC.read_text()
    for heading in (
        "Layer 1",
        "Layer 2",
        "Layer 3",
        "Layer 4",
        "Topics of a file",
        "Files of a topic",
        "Conversations by month",
        "Token totals by kind",
    ):
        assert f"### {heading}" in text
    assert len(QUERIES) >= 18


@pytest.mark.parametrize("sql", QUERIES, ids=[q.strip().splitlines()[0][:50] for q in QUERIES])
def test_each_query_runs_on_the_sample_corpus(sample: sqlite3.Connection, db_path: Path, sql: str) -> None:
    # a plain read-only connection, as sqlite3 -readonly opens it: no memdex code in between
    reader = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        rows = reader.execute(sql).fetchall()
    finally:
        reader.close()
    if not sql.strip().startswith(MAY_BE_EMPTY) and MAY_BE_EMPTY[0] not in sql:
        assert rows, sql


def test_layer_1_by_hand_ranks_as_memdex_search_does(sample: sqlite3.Connection) -> None:
    from memdex.query.search import search

    layer_1 = next(q for q in QUERIES if 'MATCH \'"worktre" AND "cleanup"\'' in q)
    by_hand = sample.execute(layer_1).fetchall()
    result = search(sample, "worktree cleanup", limit=len(by_hand))
    assert [r[0] for r in by_hand] == [h.id for h in result.hits if h.match_layer == 1]
