"""The four-layer cascade, filters, granularity, budget and hostile input, on real SQLite."""

import json
import sqlite3
from pathlib import Path

import pytest

from memdex.errors import InvalidParameter, QuerySyntaxError
from memdex.ingest.pipeline import index_paths
from memdex.query.request import Filters
from memdex.query.search import search

from .test_terms import HOSTILE

LAYER_CORPUS = {
    # title and tags carry "kubernetes"; the body never says it
    "deploy/rollout.md": "---\ntitle: Kubernetes rollout checklist\ntags: [deploy]\n---\n# Steps\n\nDrain nodes first.\n",
    # "k8s" only in a tag: reached from "kubernetes" through a user synonym (layer 2)
    "deploy/cluster.md": "---\ntitle: Cluster upgrades\ntags: [k8s]\n---\n# Upgrade\n\nOne minor version at a time.\n",
    # "kubernetes" only in the text (layer 3)
    "notes/meeting.md": "# Weekly sync\n\nWe talked about kubernetes costs and the cafeteria.\n",
    # "kube" only in the text (layer 4)
    "notes/chat.md": "# Chat log\n\nSomeone asked whether kube manifests belong in git.\n",
    "notes/unrelated.md": "# Gardening\n\nTomatoes need sun.\n",
}


@pytest.fixture
def layered(conn: sqlite3.Connection, tmp_path: Path) -> sqlite3.Connection:
    root = tmp_path / "layered"
    for rel, text in LAYER_CORPUS.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    index_paths(conn, [root])
    conn.execute("INSERT INTO synonyms (term, synonym) VALUES ('kubernetes', 'k8s'), ('kubernetes', 'kube')")
    return conn


def test_each_result_carries_the_layer_that_found_it(layered: sqlite3.Connection) -> None:
    result = search(layered, "kubernetes")
    got = [(h.key, h.match_layer, h.why_relevant["match"]) for h in result.hits]
    assert got == [
        ("deploy/rollout.md", 1, "all"),
        ("deploy/cluster.md", 2, "all"),
        ("notes/meeting.md", 3, "all"),
        ("notes/chat.md", 4, "all"),
    ]
    assert [r.layer for r in result.layers] == [1, 2, 3, 4]
    assert result.hits[1].why_relevant["synonyms"] == [
        {"term": "kubernetes", "synonym": "k8s", "fields": ["topics"]}
    ]
    assert result.hits[0].relevance > result.hits[1].relevance > result.hits[3].relevance
    assert all(0 < h.relevance <= 1 for h in result.hits)


def test_the_cascade_widens_only_while_results_are_too_few(layered: sqlite3.Connection) -> None:
    result = search(layered, "kubernetes", limit=1)
    assert [r.layer for r in result.layers] == [1]
    assert [h.key for h in result.hits] == ["deploy/rollout.md"]


def test_without_synonyms_layers_2_and_4_do_not_run(layered: sqlite3.Connection) -> None:
    result = search(layered, "kubernetes", use_synonyms=False)
    assert {r.layer for r in result.layers} == {1, 3}
    assert [h.key for h in result.hits] == ["deploy/rollout.md", "notes/meeting.md"]


def test_all_term_matches_come_before_partial_ones(layered: sqlite3.Connection) -> None:
    hits = search(layered, "kubernetes costs", use_synonyms=False).hits
    assert [(h.key, h.why_relevant["match"]) for h in hits] == [
        ("notes/meeting.md", "all"),  # both words in one passage
        ("deploy/rollout.md", "any"),  # only "kubernetes", though in its title
    ]
    assert hits[1].why_relevant["missing"] == ["costs"]
    assert hits[0].relevance > hits[1].relevance


def test_disable_all_hooks_on_windows(serena: sqlite3.Connection) -> None:
    top = search(serena, "disableAllHooks on Windows").hits[0]
    assert (top.key, top.match_layer) == ("copilot-disable-all-hooks-windows", 1)
    assert top.path.endswith("serena-memories/copilot-disable-all-hooks-windows.md")
    assert [t["term"] for t in top.why_relevant["terms"]] == ["disableallhooks", "windows"]


def test_chatty_reaches_chatgpt_through_layers_2_and_4(sample: sqlite3.Connection) -> None:
    hits = search(sample, "Chatty").hits
    titled = [h for h in hits if "ChatGPT" in h.title]
    assert [h.match_layer for h in titled] == [2] * 6  # notes, a memory, an export, archive chats
    assert {h.kind for h in titled} == {"note", "memory", "chatgpt", "archive"}
    assert [(h.title, h.match_layer) for h in hits if h not in titled] == [
        ("Fixing hallucinated citations", 4)
    ]
    assert all(h.why_relevant["synonyms"][0]["synonym"] == "chatgpt" for h in hits)


def test_question_needs_no_rewording(sample: sqlite3.Connection) -> None:
    hits = search(sample, "what did we decide about the database?").hits
    assert {h.title for h in hits[:2]} == {
        "Billing stays on PostgreSQL",
        "Use SQLite in WAL mode for the job queue",
    }


@pytest.mark.parametrize(
    ("filters", "expected"),
    [
        (
            Filters(namespace="decisions"),
            {"Billing stays on PostgreSQL", "Use SQLite in WAL mode for the job queue"},
        ),
        (Filters(tags=["billing"]), {"Billing stays on PostgreSQL"}),
        (Filters(tags=["database", "SQLITE"]), {"Use SQLite in WAL mode for the job queue"}),
        (Filters(type="procedural"), {"Rotate the deploy keys"}),
        (Filters(kinds=["serena"]), {"Git: Rebase Conflicts", "CI: Cache Keys"}),
        (
            Filters(since="2025-10"),
            {
                "Billing stays on PostgreSQL",
                "Rotate the deploy keys",
                "Retro: the search outage of 14 October",
                "ChatGPT exports are trees, not lists",
                "Git: Rebase Conflicts",  # undated: by its file time, 2026-01-15 (conftest)
                "CI: Cache Keys",
            },
        ),
        (
            Filters(until="2025-09"),
            {
                "Use SQLite in WAL mode for the job queue",
                "ChatGPT conversation: Python packaging",
                "ChatGPT rate limits on the team plan",
            },
        ),
    ],
)
def test_filters(sample: sqlite3.Connection, filters: Filters, expected: set[str]) -> None:
    query = "sqlite postgresql billing deploy keys outage packaging rebase cache database"
    assert {h.title for h in search(sample, query, limit=50, filters=filters).hits} == expected


def test_month_words_filter_dates_and_fall_back_to_words(sample: sqlite3.Connection) -> None:
    result = search(sample, "outage in October")
    assert [h.title for h in result.hits] == ["Retro: the search outage of 14 October"]
    assert result.filters == {"months": [10]}
    fallback = search(sample, "quarantine in March 2031")
    assert fallback.notes == ["nothing dated March 2031; searched those words as text"]
    assert fallback.hits[0].title == "CI: Quarantine Flaky Tests"


def test_bad_dates_are_refused(sample: sqlite3.Connection) -> None:
    with pytest.raises(
        InvalidParameter, match=r"--since 'last week' is not a date: use YYYY, YYYY-MM or YYYY-MM-DD"
    ):
        search(sample, "x", filters=Filters(since="last week"))


def test_chunk_granularity_returns_chunks_with_line_ranges(
    sample: sqlite3.Connection, sample_copy: Path
) -> None:
    hits = search(sample, "rerere conflict", granularity="chunk").hits
    top = hits[0]
    assert top.heading == "Git: Rebase Conflicts"
    lines = (sample_copy / "serena" / "git" / "git-rebase-conflicts.md").read_text().splitlines()
    assert "rerere" in "\n".join(lines[top.line_start - 1 : top.line_end])
    assert top.est_tokens == (top.size_bytes + 3) // 4
    assert len({h.chunk_id for h in hits}) == len(hits)


def test_token_budget_stops_before_it_would_be_passed(sample: sqlite3.Connection) -> None:
    everything = search(sample, "the", limit=50).hits
    assert len(everything) > 3
    budget = sum(h.est_tokens for h in everything[:2]) + everything[2].est_tokens - 1
    result = search(sample, "the", limit=50, max_tokens=budget)
    assert [h.id for h in result.hits] == [h.id for h in everything[:2]]
    assert result.truncated_by_budget and result.total_tokens <= budget


def test_raw_fts5(sample: sqlite3.Connection) -> None:
    hits = search(sample, "quarant* OR rerere", raw=True).hits
    assert {h.title for h in hits} == {"CI: Quarantine Flaky Tests", "Git: Rebase Conflicts"}
    with pytest.raises(QuerySyntaxError, match=r"Invalid FTS5 query 'NEAR\(': .*Drop --raw"):
        search(sample, "NEAR(", raw=True)
    # a column only the topics table has: layer 3 is skipped, with a note
    result = search(sample, "title : rebase", raw=True)
    assert [h.title for h in result.hits] == ["Git: Rebase Conflicts"]
    assert result.notes == ["layer 3 skipped: no such column: title"]


@pytest.mark.slow
@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_text_never_raises(sample: sqlite3.Connection, text: str) -> None:
    result = search(sample, text)
    assert result.found >= 0
    assert all(0 <= h.relevance <= 1 for h in result.hits)


def test_query_with_no_words(sample: sqlite3.Connection) -> None:
    result = search(sample, "?!? 🦜")
    assert result.hits == [] and result.notes == ["the query has no words to search for"]


def test_snippets_mark_the_matches(sample: sqlite3.Connection) -> None:
    hit = search(sample, "rerere").hits[0]
    assert "«rerere»" in hit.snippet


def test_folding_is_one_rule_for_what_is_indexed_and_what_is_asked(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    """Case, ß, ligatures and accents fold the same way in the index and in a query
    (memdex.tokens), so each spelling finds the note and none is a typo. Previously FTS5 folded
    the index and memdex the query: STRASSE was "did you mean" straße (#26, #35)."""
    (tmp_path / "n").mkdir()
    (tmp_path / "n" / "a.md").write_text("# Straße\n\nThe ﬁle about the Café.\n")
    index_paths(conn, [tmp_path / "n"])
    for query in ("Straße", "STRASSE", "straße", "ﬁle", "file", "cafe", "CAFÉ"):
        result = search(conn, query)
        assert [h.title for h in result.hits] == ["Straße"], query
        assert result.typos is None, query
    hit = search(conn, "Straße").hits[0]
    assert hit.why_relevant["terms"][0]["fields"] == ["topics", "content"]


def test_found_says_whether_it_is_every_match(sample: sqlite3.Connection) -> None:
    few = search(sample, "ChatGPT", limit=1)
    assert (len(few.hits), few.found_is_total) == (1, False)
    every = search(sample, "ChatGPT", limit=100)
    assert every.found_is_total and every.found == len(every.hits) == 7  # 2 notes, 1 memory, 4 chats


def test_raw_expressions_are_capped(sample: sqlite3.Connection) -> None:
    with pytest.raises(QuerySyntaxError, match=r"at most 2,000 characters \(this one is 4,000\)"):
        search(sample, "a " * 2000, raw=True)


def test_text_that_cannot_be_encoded(sample: sqlite3.Connection) -> None:
    "A lone surrogate (what Python makes of undecodable bytes in arguments) is replaced."
    result = search(sample, "rerere \udcff")
    assert [h.title for h in result.hits] == ["Git: Rebase Conflicts"]
    assert json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")


def test_a_search_reads_one_snapshot(sample: sqlite3.Connection) -> None:
    "A writer committing between a search's statements must not change what the search sees."
    from memdex.query.search import snapshot
    from memdex.store import db

    writer = db.connect(sample.execute("PRAGMA database_list").fetchone()[2])
    with snapshot(sample):
        before = sample.execute("SELECT count(*) FROM documents").fetchone()[0]
        writer.execute("DELETE FROM documents WHERE title = 'CI: Cache Keys'")
        assert sample.execute("SELECT count(*) FROM documents").fetchone()[0] == before
    assert sample.execute("SELECT count(*) FROM documents").fetchone()[0] == before - 1
    assert not sample.in_transaction
    writer.close()


@pytest.mark.slow
@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_raw_text_is_a_result_or_a_syntax_error(sample: sqlite3.Connection, text: str) -> None:
    try:
        search(sample, text, raw=True)
    except QuerySyntaxError as exc:
        assert str(exc).startswith(("Invalid FTS5 query", "A raw FTS5 query may be at most"))


@pytest.mark.parametrize("text", ["rerere:", "-rerere", "rerere*", '"rerere', "(rerere)", "^rerere"])
def test_punctuation_around_a_word_still_finds_it(sample: sqlite3.Connection, text: str) -> None:
    assert [h.title for h in search(sample, text).hits] == ["Git: Rebase Conflicts"]


def test_a_kind_the_index_does_not_hold_is_named(sample: sqlite3.Connection) -> None:
    result = search(sample, "rerere", filters=Filters(kinds=["serna"]))
    assert result.hits == []
    assert result.notes == [
        "no documents of kind serna here; kinds in this index: archive, chatgpt, memory, note, serena"
    ]


def test_terms_in_most_passages_are_left_out_of_the_any_term_pass(
    conn: sqlite3.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memdex.query import ranking

    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(40):  # "deploy" is everywhere; "quokka" in two notes, "wombat" in one
        extra = " quokka" if i in (3, 17) else ""
        extra += " wombat" if i == 17 else ""
        (notes / f"n{i:02d}.md").write_text(f"# Note {i}\n\nWe deploy the service on day {i}.{extra}\n")
    index_paths(conn, [notes])
    # Below the real floor (10,000 passages) nothing is pruned: same results as ever.
    unpruned = search(conn, "deploy quokka koala", use_synonyms=False)
    assert not any("too many passages" in n for n in unpruned.notes)
    assert unpruned.found == 40

    monkeypatch.setattr(ranking, "COMMON_MIN_ROWS", 10)
    pruned = search(conn, "deploy quokka koala", use_synonyms=False)
    assert [n for n in pruned.notes if "too many passages" in n] == [
        'left out of the any-term pass, found in too many passages to rank by: "deploy"'
    ]
    assert {Path(h.path).name for h in pruned.hits} == {"n03.md", "n17.md"}
    # A query of common words only keeps them all: there would be nothing left to search.
    common = search(conn, "deploy service", use_synonyms=False)
    assert not any("too many passages" in n for n in common.notes) and common.found == 40
    # All-term layers are untouched: a note with every word still comes first.
    both = search(conn, "deploy quokka wombat", use_synonyms=False)
    assert Path(both.hits[0].path).name == "n17.md"


@pytest.mark.parametrize("layer", ["layer_topics", "layer_content", "layer_bodies"])
@pytest.mark.parametrize("text", ["worktree isolation hooks", "windows", "rate limit graphql frontmatter"])
def test_unfiltered_layers_give_the_filtered_rows_in_order(
    serena: sqlite3.Connection, layer: str, text: str
) -> None:
    "Issue 16: with no filter, a layer ranks before it joins; the rows and their order stay."
    from memdex.query.ranking import bm25_params
    from memdex.query.request import Filters
    from memdex.store import db
    from memdex.tokens import phrase

    match = " OR ".join(phrase([w]) for w in text.split())
    params = {**Filters().params(), **bm25_params(), "match": match, "limit": 40}
    filtered = [tuple(r) for r in serena.execute(db.query(layer), params)]
    assert filtered
    assert [tuple(r) for r in serena.execute(db.query(layer + "_unfiltered"), params)] == filtered


@pytest.mark.parametrize("text", ["worktree isolation hooks", "rate limit graphql frontmatter", "windows"])
def test_chunks_matched_in_ranges_explain_results_the_same(
    serena: sqlite3.Connection, text: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    "Issue 16: the shown documents' chunks matched within their id ranges, or across the index."
    from memdex.query import results

    across = [h.to_dict() for h in search(serena, text, limit=20).hits]
    monkeypatch.setattr(results, "RANGE_POSTINGS", 0)
    assert [h.to_dict() for h in search(serena, text, limit=20).hits] == across
    for granularity in ("chunk", "chat"):
        in_ranges = [h.to_dict() for h in search(serena, text, limit=20, granularity=granularity).hits]
        monkeypatch.setattr(results, "RANGE_POSTINGS", 10**12)
        assert [
            h.to_dict() for h in search(serena, text, limit=20, granularity=granularity).hits
        ] == in_ranges
        monkeypatch.setattr(results, "RANGE_POSTINGS", 0)


ORDER_QUERIES = [
    "disableAllHooks on Windows",
    "what did we decide about frontmatter migrations?",
    "worktree cleanup after a failed rebase",
    "agent memory search budget tokens",
    "hook suppression windows copilot",
]


@pytest.mark.parametrize("granularity", ["chat", "chunk"])
def test_results_are_in_the_order_of_the_score_they_show(
    serena: sqlite3.Connection, granularity: str
) -> None:
    """Issue 26: results of an all-words layer came before the any-word pass's with a lower
    score, so the score shown disagreed with the order. Higher is always earlier now."""
    mixed = 0
    for query in ORDER_QUERIES:
        hits = search(serena, query, limit=20, granularity=granularity).hits
        scores = [h.score for h in hits]
        assert scores == sorted(scores, reverse=True), (query, scores)
        mixed += len({h.match_layer for h in hits}) > 1
    assert mixed  # the order crossed layers, where the raw scores do not compare


def test_conversation_windows_are_in_the_order_of_their_score(sample: sqlite3.Connection) -> None:
    hits = search(sample, "ChatGPT sql rewriting", granularity="chunk", limit=20).hits
    assert any(h.passage is not None for h in hits)
    scores = [h.score for h in hits]
    assert scores == sorted(scores, reverse=True)
