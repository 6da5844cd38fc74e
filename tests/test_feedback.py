"""Related words (passages/feedback.py): what the best-matching messages add to a query, weighed
with the idf of a real index."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memdex.ingest.pipeline import index_paths
from memdex.query import ranking
from memdex.query.passages.feedback import related
from memdex.query.results import explainer_for
from memdex.query.terms import parse_query


def _index(conn: sqlite3.Connection, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "dog.md").write_text("# Juniper\n\nKangaroo treats for training Juniper.\n")
    (notes / "car.md").write_text("# Car\n\nThe petrol card expired. Training the new driver.\n")
    index_paths(conn, [notes])


def test_the_words_of_the_best_passages_weighed_by_rank_and_rarity(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    _index(conn, tmp_path)
    explainer = explainer_for(conn, parse_query("rewards for the dog").terms)
    best = [
        ("We give her rewards: kangaroo treats, 20 of them, and the dog loves kangaroo treats.", 3.0),
        ("Rewards for the dog during training.", 1.0),
    ]
    found = related(conn, best, explainer)
    assert found is not None
    words = found.words
    assert words[0] == "kangaroo"  # twice in the best passage, and rare in the index
    assert "treats" in words and "training" in words
    # neither the query's words, nor stop words, nor numbers
    assert not {"rewards", "dog", "the", "for", "her", "them", "20"} & set(words)
    assert sum(found.weights.values()) == pytest.approx(ranking.FEEDBACK_MASS)
    assert len(words) <= ranking.FEEDBACK_TERMS
    assert found.score("kangaroo treats", 5.0) > found.score("the petrol card", 5.0) == 0.0


def test_no_related_words_from_nothing(conn: sqlite3.Connection, tmp_path: Path) -> None:
    _index(conn, tmp_path)
    explainer = explainer_for(conn, parse_query("kangaroo treats").terms)
    assert related(conn, [], explainer) is None
    assert related(conn, [("Kangaroo treats, the.", 1.0)], explainer) is None  # only its own words


def test_negations_and_tags_give_no_related_words(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """Issue 26: "don" (of "don't") and "ide" (of <ide_opened_file>) were listed as related
    words. A negation and a tag are taken out whole; "won" the verb stays."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nDon won the kangaroo race. I don't know.\n")
    (notes / "b.md").write_text("# B\n\nOpened the ide file. We won't say.\n")
    index_paths(conn, [notes])
    explainer = explainer_for(conn, parse_query("rewards").terms)
    best = [
        ("Rewards: I don't know, we don't care, don't ask. <ide_opened_file>x</ide_opened_file>", 2.0),
        ("Rewards, don't they? Juniper won the kangaroo race; we won't stop.", 1.0),
    ]
    found = related(conn, best, explainer)
    assert found is not None
    assert "kangaroo" in found.words and "won" in found.words
    assert not {"don", "ide", "opened_file", "opened", "file"} & set(found.words)
