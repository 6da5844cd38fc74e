"""What a search says to try instead: "did you mean", the filter values the index holds, the
budget the first result needs (memdex/query/suggest.py), on real indexes (issue 26)."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from memdex.ingest.pipeline import index_paths
from memdex.query.request import Filters, SearchRequest
from memdex.query.search import search
from memdex.query.suggest import distance


def test_a_query_that_matches_nothing_as_typed_is_searched_as_the_nearest_words(
    sample: sqlite3.Connection,
) -> None:
    result = search(sample, "rebsae conflcit")
    assert [h.title for h in result.hits] == ["Git: Rebase Conflicts"]
    assert result.query == "rebsae conflcit"  # what was asked; the notes say what was searched
    assert result.terms == ["rebase", "conflict"]
    assert result.notes[0] == "searched “rebase conflict” instead (nothing matched the words as typed)"
    assert result.typos == {
        "words": [{"typed": "rebsae", "suggested": "rebase"}, {"typed": "conflcit", "suggested": "conflict"}],
        "suggested_query": "rebase conflict",
        "searched_instead": True,
        "why": "nothing matched the words as typed",
        "note": "searched “rebase conflict” instead (nothing matched the words as typed)",
    }
    assert result.to_dict()["typos"] == result.typos
    assert result.to_dict()["searched_query"] == "rebase conflict"  # where a script looks (#35)


def test_a_word_no_document_holds_is_suggested_and_searched_only_when_asked(
    sample: sqlite3.Connection,
) -> None:
    as_typed = search(sample, "rebsae conflict")  # "conflict" alone finds the note
    assert as_typed.terms == ["rebsae", "conflict"] and as_typed.hits
    assert "did you mean: rebase conflict?" in as_typed.notes
    assert as_typed.typos is not None and as_typed.typos["searched_instead"] is False
    fixed = search(sample, SearchRequest("rebsae conflict", fix_typos=True))
    assert fixed.terms == ["rebase", "conflict"]
    assert fixed.hits[0].title == "Git: Rebase Conflicts" and fixed.hits[0].match_layer == 1
    assert fixed.notes[0] == "searched “rebase conflict” instead (--fix-typos)"
    assert fixed.typos is not None and fixed.typos["why"] == "--fix-typos"


def test_the_suggestion_keeps_the_rest_of_the_query(sample: sqlite3.Connection) -> None:
    result = search(sample, "Rebsae: the conflcit?", fix_typos=True)
    assert result.typos is not None
    assert result.typos["suggested_query"] == "rebase: the conflict?"
    assert [w["typed"] for w in result.typos["words"]] == ["Rebsae", "conflcit"]


@pytest.mark.parametrize("query", ["rebase conflict", "rerere", "xylophone", "zzzz qqqq", "2025 abc"])
def test_no_suggestion_when_every_word_is_indexed_or_nothing_is_near(
    sample: sqlite3.Connection, query: str
) -> None:
    result = search(sample, query)
    assert result.typos is None
    assert not [n for n in result.notes if "did you mean" in n or "instead" in n]


def test_a_word_a_synonym_stands_in_for_is_no_typo(sample: sqlite3.Connection) -> None:
    sample.execute("INSERT INTO synonyms (term, synonym) VALUES ('rebsae', 'rebase')")
    result = search(sample, "rebsae conflict")
    assert result.typos is None
    assert result.hits[0].title == "Git: Rebase Conflicts"


def test_near_as_stems_is_not_enough_the_words_must_be_near_too(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    """The stem of 'quantization' is 'quantiz', two edits from 'quartz'; the words are not near.
    And a typo in a word's ending that changes how it stems ('quantizaton' keeps its ending) is
    still found, from the word's beginning."""
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "q.md").write_text("# Models\n\nquantization of weights, quantization again\n")
    index_paths(conn, [tmp_path / "notes"])
    assert search(conn, "quartz").typos is None
    assert search(conn, "quantizaton").typos == {
        "words": [{"typed": "quantizaton", "suggested": "quantization"}],
        "suggested_query": "quantization",
        "searched_instead": True,
        "why": "nothing matched the words as typed",
        "note": "searched “quantization” instead (nothing matched the words as typed)",
    }


@pytest.mark.parametrize(
    ("a", "b", "most", "edits"),
    [
        ("rebsa", "rebas", 2, 1),  # two letters swapped: one edit
        ("conflcit", "conflict", 2, 1),
        ("kitten", "sitting", 3, 3),
        ("same", "same", 2, 0),
        ("abcdef", "abc", 1, 2),  # past the bound: most + 1
        ("abcd", "wxyz", 2, 3),
    ],
)
def test_edit_distance(a: str, b: str, most: int, edits: int) -> None:
    assert distance(a, b, most) == edits


def test_suggestions_are_cheap_on_the_serena_corpus(serena: sqlite3.Connection) -> None:
    "981 files, 8,076 stems: two typos cost ~11 ms (query/suggest.py); bounded here at 150 ms."
    started = time.perf_counter()
    result = search(serena, "rebsae conflcit", patterns=False)
    took = time.perf_counter() - started
    assert result.typos is not None
    assert [w["suggested"] for w in result.typos["words"]] == ["rebase", "conflict"]
    assert result.hits and took < 1.0
    from memdex.query.suggest import find_typos
    from memdex.query.terms import parse_query

    terms = parse_query("rebsae conflcit").key_terms
    started = time.perf_counter()
    find_typos(serena, "rebsae conflcit", terms)
    assert time.perf_counter() - started < 0.15


def test_a_filter_value_nothing_has_is_told_the_values_there_are(sample: sqlite3.Connection) -> None:
    result = search(sample, "rebase", filters=Filters(platform="chatgtp", namespace="decsions"))
    assert result.hits == []
    assert result.notes == [
        "no documents of namespace decsions here; namespaces in this index, nearest first: decisions, "
        "episodes, ci, learnings, git, procedures, decisions/project, episodes/user and 2 more",
        "no documents of platform chatgtp here; platforms in this index, nearest first: chatgpt, claude, gemini",
    ]
    # a value that exists, under a query that finds nothing with it, is not questioned
    exists = search(sample, "rebase", filters=Filters(platform="chatgpt"))
    assert exists.hits == [] and not [n for n in exists.notes if "here;" in n]


def test_a_budget_too_small_for_the_first_result_says_what_it_needs(sample: sqlite3.Connection) -> None:
    whole = search(sample, "rebase conflict")
    need = whole.hits[0].est_tokens
    result = search(sample, "rebase conflict", max_tokens=10)
    assert result.hits == [] and result.truncated_by_budget and result.found >= 1
    assert result.notes[-1] == (
        f"the first result needs ~{need:,} tokens, more than the --max-tokens budget of 10: "
        f"raise --max-tokens to {need:,} or more"
    )
    fits = search(sample, "rebase conflict", max_tokens=need)
    assert fits.hits[0].title == whole.hits[0].title
