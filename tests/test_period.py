"""Time is a query (issue 17): "October", "2026", "last week" list what is dated then, newest
first, with the themes of that time -- through the CLI, batch, MCP and answer mode."""

from __future__ import annotations

import json
import os
import sqlite3
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memdex.doors.batch import run_batch
from memdex.doors.cli import cli
from memdex.errors import InvalidParameter
from memdex.ingest.pipeline import index_paths
from memdex.query.period import relative_spans
from memdex.query.search import search
from memdex.query.terms import parse_query
from memdex.query.themes import themes
from memdex.store import db

from .messages_api import serving
from .test_answer import assert_citations_resolve, with_server

OCTOBER = [  # the sample corpus's six documents dated October 2025, newest first
    "ChatGPT keeps rewriting my SQL",
    "Rotate the deploy keys",
    "Claude for code review",
    "Retro: the search outage of 14 October",
    "Fixing hallucinated citations",
    "ChatGPT exports are trees, not lists",
]
WEDNESDAY = date(2026, 3, 18)


def run(db_path: Path, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    result = CliRunner().invoke(cli, ["--db", str(db_path), *args, "--json"], env=env, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    data: dict[str, Any] = json.loads(result.stdout)
    return data


# -- reading relative dates ------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "since", "until"),
    [
        ("today", "2026-03-18", "2026-03-18"),
        ("yesterday", "2026-03-17", "2026-03-17"),
        ("yesterday's session", "2026-03-17", "2026-03-17"),
        ("the day before yesterday", "2026-03-16", "2026-03-16"),
        ("this week", "2026-03-16", "2026-03-18"),  # calendar week: Monday to today
        ("last week", "2026-03-09", "2026-03-15"),  # the whole week before, Monday to Sunday
        ("past week", "2026-03-12", "2026-03-18"),  # the rolling 7 days
        ("past 7 days", "2026-03-12", "2026-03-18"),
        ("last 3 days", "2026-03-16", "2026-03-18"),
        ("this month", "2026-03-01", "2026-03-18"),
        ("last month", "2026-02-01", "2026-02-28"),
        ("this year", "2026-01-01", "2026-03-18"),
        ("last year", "2025-01-01", "2025-12-31"),
        ("20 days ago", "2026-02-26", "2026-02-26"),
        ("two weeks ago", "2026-03-02", "2026-03-08"),  # the calendar week that held that day
        ("a month ago", "2026-02-01", "2026-02-28"),
        ("since Monday", "2026-03-16", "2026-03-18"),
        ("since Wednesday", "2026-03-18", "2026-03-18"),  # today is one
        ("since Thursday", "2026-03-12", "2026-03-18"),
        ("since last week", "2026-03-09", "2026-03-18"),
        ("last Friday", "2026-03-13", "2026-03-13"),
        ("LAST WEEK", "2026-03-09", "2026-03-15"),
    ],
)
def test_relative_dates_resolve_against_today(text: str, since: str, until: str) -> None:
    spans, rest = relative_spans(text, lambda: WEDNESDAY)
    assert [(s.since.isoformat(), s.until.isoformat()) for s in spans] == [(since, until)]
    assert rest.split() in ([], ["session"])
    assert not spans[0].loose


@pytest.mark.parametrize(
    ("text", "today", "since", "until"),
    [
        # a weekend: Saturday and Sunday, widened by the Friday before and the Monday after
        ("last weekend", WEDNESDAY, "2026-03-13", "2026-03-16"),
        ("the past weekend", WEDNESDAY, "2026-03-13", "2026-03-16"),
        ("previous weekend", date(2026, 3, 22), "2026-03-13", "2026-03-16"),  # on its Sunday
        ("last weekend", date(2026, 3, 16), "2026-03-13", "2026-03-16"),  # on the Monday after
        ("this weekend", WEDNESDAY, "2026-03-20", "2026-03-23"),
        ("this weekend", date(2026, 3, 16), "2026-03-13", "2026-03-16"),  # a Monday: the one just gone
        # a loose count: one unit either way
        ("a couple of days ago", WEDNESDAY, "2026-03-15", "2026-03-17"),
        ("couple days ago", WEDNESDAY, "2026-03-15", "2026-03-17"),
        ("a few days ago", WEDNESDAY, "2026-03-14", "2026-03-16"),
        ("several days ago", WEDNESDAY, "2026-03-13", "2026-03-15"),
        ("a few weeks ago", WEDNESDAY, "2026-02-16", "2026-03-08"),  # calendar weeks 2 to 4 back
        ("a couple of months ago", WEDNESDAY, "2025-12-01", "2026-02-28"),
        ("last weekend", date(2026, 3, 21), "2026-03-13", "2026-03-16"),  # on a Saturday
        ("this weekend", date(2026, 3, 22), "2026-03-20", "2026-03-23"),  # on a Sunday
        ("a couple of days ago", date(2026, 3, 1), "2026-02-26", "2026-02-28"),  # across a month's end
        ("a few years ago", WEDNESDAY, "2022-01-01", "2024-12-31"),  # calendar years 2 to 4 back
    ],
)
def test_a_time_said_loosely_is_widened(text: str, today: date, since: str, until: str) -> None:
    spans, rest = relative_spans(text, lambda: today)
    assert [(s.since.isoformat(), s.until.isoformat(), s.loose) for s in spans] == [(since, until, True)]
    assert rest.split() == []


def test_since_a_loose_time_is_a_start_not_a_loose_time() -> None:
    spans, _ = relative_spans("since last weekend", lambda: WEDNESDAY)
    assert [(s.since.isoformat(), s.until.isoformat(), s.loose) for s in spans] == [
        ("2026-03-13", "2026-03-18", False)
    ]


@pytest.mark.parametrize(
    "text",
    ["a few days", "a couple of days", "the weekend", "weekend plans", "last few days", "this weekends"],
)
def test_words_near_a_loose_time_are_words(text: str) -> None:
    assert relative_spans(text, lambda: WEDNESDAY) == ([], text)


def test_the_words_around_a_relative_date_stay_words() -> None:
    spans, rest = relative_spans("deploy keys last week, and the outage", lambda: WEDNESDAY)
    assert [s.words for s in spans] == ["last week"]
    assert rest.split() == ["deploy", "keys", ",", "and", "the", "outage"]
    # words that only look like dates stay words
    for text in ("lastweek", "last-week", "weekday", "todays", "99999 years ago", "since monday-ish"):
        assert relative_spans(text, lambda: WEDNESDAY)[0] == [], text


def test_memdex_now_pins_today_and_a_bad_value_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMDEX_NOW", "2026-03-18")
    assert parse_query("yesterday").window() == ("2026-03-17", "2026-03-17")
    monkeypatch.setenv("MEMDEX_NOW", "next tuesday")
    assert parse_query("deploy keys").key_terms  # no relative date: today is never asked
    with pytest.raises(InvalidParameter, match=r"MEMDEX_NOW='next tuesday' is not an ISO date"):
        parse_query("yesterday")


@pytest.mark.parametrize(
    ("text", "date_only"),
    [
        ("October", True),
        ("what happened in October?", True),
        ("what did we work on last week", True),
        ("May 2026", True),
        ("deploy keys in October", False),
        ("deploy keys", False),
        ("what happened", False),
    ],
)
def test_a_query_of_dates_alone(text: str, date_only: bool) -> None:
    assert parse_query(text).date_only is date_only


# -- the listing on the sample corpus --------------------------------------------------------
def test_october_lists_the_six_october_documents_newest_first(
    sample: sqlite3.Connection, db_path: Path
) -> None:
    out = run(db_path, "search", "October")
    assert [r["title"] for r in out["results"]] == OCTOBER
    assert out["found"] == 6 and out["found_is_total"]
    assert all(r["date"].startswith("2025-10") and r["match_layer"] == 0 for r in out["results"])
    assert out["period"] == {"words": ["October"], "since": None, "until": None, "order": "newest first"}
    assert {"term": "chatgpt", "count": 3, "kind": "platform"} in out["themes"]
    sources = {r["title"]: r["date_source"] for r in out["results"]}
    assert sources["Rotate the deploy keys"] == "frontmatter"
    assert sources["ChatGPT keeps rewriting my SQL"] == "conversation"
    assert sources["Claude for code review"] == "conversation"  # the archive row's date
    top = out["results"][0]
    assert (
        top["why_relevant"]
        == top["why"]["summary"]
        == ("layer 0 (date): dated 2025-10-31, from the conversation's timestamps; in October")
    )
    text = CliRunner().invoke(cli, ["--db", str(db_path), "search", "October"]).stdout
    head, first = text.split("\n\n")[0], text.split("\n\n")[1]
    assert head.splitlines()[-1] == "Themes: chatgpt 3 (platform)"  # above the results
    assert "Note: 6 documents dated October, listed newest first" in head
    assert "ChatGPT keeps rewriting my SQL" in first


def test_a_listing_takes_filters_limit_granularity_and_budget(sample: sqlite3.Connection) -> None:
    memories = search(sample, "October", filters=None, limit=10).hits
    assert len(memories) == 6
    only = search(sample, "October --", limit=10)  # punctuation is no word
    assert [h.title for h in only.hits] == OCTOBER
    from memdex.query.request import Filters, SearchRequest

    kind = search(sample, SearchRequest("October", filters=Filters(kinds=["memory"])))
    assert [h.title for h in kind.hits] == [t for t in OCTOBER if t in {h.title for h in kind.hits}]
    assert {h.kind for h in kind.hits} == {"memory"} and kind.found == 3
    assert [h.title for h in search(sample, "October", limit=2).hits] == OCTOBER[:2]
    chunks = search(sample, "October", granularity="chunk", limit=50)
    assert chunks.found == sum(
        sample.execute(
            "SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.date LIKE '2025-10%'"
        ).fetchone()
    )
    order = [h.title for h in chunks.hits]
    assert list(dict.fromkeys(order)) == OCTOBER  # a document's chunks together, in date order
    budget = search(sample, "October", max_tokens=300)
    assert budget.truncated_by_budget and sum(h.est_tokens for h in budget.hits) <= 300
    assert [h.title for h in budget.hits] == OCTOBER[: len(budget.hits)]


def test_mixed_with_words_the_date_still_filters(sample: sqlite3.Connection) -> None:
    hits = search(sample, "deploy keys in October").hits
    assert hits[0].title == "Rotate the deploy keys" and hits[0].match_layer == 1
    assert all(h.date and h.date.startswith("2025-10") for h in hits)
    assert search(sample, "deploy keys in October").themes == []


def test_a_month_that_names_someone_is_searched_as_a_word(conn: sqlite3.Connection, tmp_path: Path) -> None:
    "A dog called June: a month filter would hide every note about her not dated June."
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "june.md").write_text(
        "---\ndate: 2025-03-04\n---\n# Vet\n\nJune got her first Cytopoint shot.\n"
    )
    (notes / "other.md").write_text(
        "---\ncreated: 2025-06-10\n---\n# Garden\n\nThe first roses of the year.\n"
    )
    index_paths(conn, [notes])
    result = search(conn, "When did June get her first Cytopoint shot?")
    assert [h.title for h in result.hits][:1] == ["Vet"]
    assert (
        result.notes[0] == "read “June” as a word, not a month: write “in June” to search what is dated then"
    )
    dated = search(conn, "first shot in June")  # the user's way to ask for the month
    assert [h.title for h in dated.hits] == ["Garden"] and dated.filters["months"] == [6]


def test_nothing_dated_then_searches_the_words(sample: sqlite3.Connection) -> None:
    result = search(sample, "2019")
    assert result.period is None
    assert result.notes[0] == "nothing dated 2019; searched those words as text"


def test_an_undated_document_is_dated_by_its_file_time(sample: sqlite3.Connection, db_path: Path) -> None:
    "Its file's modification time dates it for filters and listings too, and says so (#26)."
    hit = search(sample, "worktree cleanup").hits[0]
    assert (hit.title, hit.date, hit.date_source) == (
        "Git: Cleaning Up Worktrees",
        "2026-01-15T09:30:00Z",
        "mtime",
    )
    january = search(sample, "January 2026", limit=100)  # every sample file's mtime (conftest)
    undated = {"Git: Cleaning Up Worktrees", "Git: Rebase Conflicts", "CI: Cache Keys"}
    assert undated <= {h.title for h in january.hits} and {h.date_source for h in january.hits} == {"mtime"}
    assert january.notes == [
        "5 documents dated January 2026, listed newest first; 5 of them dated by file time "
        "(a file's modification time, which a copy or a checkout sets anew)"
    ]
    assert hit.title not in {h.title for h in search(sample, "2025", limit=100).hits}
    text = (
        CliRunner().invoke(cli, ["--db", str(db_path), "search", "worktree cleanup", "--limit", "1"]).stdout
    )
    assert "serena · git · 2026-01-15 (dated by file time) · git/git-worktree-cleanup" in text


# -- the notes: yesterday and 20 days ago ---------------------------------------------
def note(folder: Path, name: str, day: date, body: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{name}.md").write_text(f"---\ntitle: {name}\ncreated: {day.isoformat()}\n---\n{body}\n")


def index_notes(db_path: Path, folder: Path, notes: list[tuple[str, date, str]]) -> None:
    "Each (name, day, body) a dated note in ``folder``, the folder indexed into ``db_path``."
    for name, day, body in notes:
        note(folder, name, day, body)
    conn = db.connect(db_path)
    index_paths(conn, [folder])
    conn.close()


def test_yesterday_and_twenty_days_ago(db_path: Path, tmp_path: Path) -> None:
    today = date(2026, 3, 18)  # a Wednesday
    notes = tmp_path / "notes"
    note(notes, "yesterday-note", today - timedelta(days=1), "Paired on the flaky cache test.")
    note(notes, "older-note", today - timedelta(days=20), "Decided to keep SQLite for the queue.")
    note(notes, "last-week-note", date(2026, 3, 10), "Release notes for 1.2.")
    (notes / "undated.md").write_text("# Undated\nNo date anywhere.\n")
    os.utime(notes / "undated.md", (978_307_200, 978_307_200))  # 2001: dated by file time, not in 2026
    conn = db.connect(db_path)
    index_paths(conn, [notes])
    conn.close()
    env = {"MEMDEX_NOW": today.isoformat()}

    def titles(query: str) -> list[str]:
        return [r["title"] for r in run(db_path, "search", query, env=env)["results"]]

    assert titles("yesterday") == ["yesterday-note"]
    assert titles("20 days ago") == ["older-note"]
    assert titles("last week") == ["last-week-note"]  # Monday 9 to Sunday 15 March
    assert titles("past 7 days") == ["yesterday-note"]
    assert titles("last month") == ["older-note"]  # February
    assert titles("this month") == ["yesterday-note", "last-week-note"]
    assert titles("what did we work on since Monday?") == ["yesterday-note"]
    assert titles("2026") == ["yesterday-note", "last-week-note", "older-note"]


def test_a_time_said_loosely_puts_what_it_holds_first_and_filters_nothing(
    db_path: Path, tmp_path: Path
) -> None:
    today = date(2026, 3, 18)  # a Wednesday: last weekend is Friday 13 to Monday 16 March
    index_notes(
        db_path,
        tmp_path / "notes",
        [
            ("weekend-bake", date(2026, 3, 14), "Baked bread for the neighbours."),
            ("january-bake", date(2026, 1, 10), "Baked bread, baked bread again: the bread bake log."),
            ("weekend-hike", date(2026, 3, 15), "A long hike by the lake."),
        ],
    )
    env = {"MEMDEX_NOW": today.isoformat()}
    words = run(db_path, "search", "baked bread", env=env)
    assert [r["title"] for r in words["results"]] == ["january-bake", "weekend-bake"]  # by the words
    loose = run(db_path, "search", "baked bread last weekend", env=env)
    # dated then and holding every word: first; the other times' matches stay, after it; the
    # weekend's document that shares no word follows the matches (few were found)
    assert [r["title"] for r in loose["results"]] == ["weekend-bake", "january-bake", "weekend-hike"]
    assert loose["filters"]["dates"]["loose"] == {
        "words": ["last weekend"],
        "since": "2026-03-13",
        "until": "2026-03-16",
    }
    assert loose["terms"] == ["baked", "bread"]  # "last weekend" is a time, not words
    assert any(
        "said loosely: searched at every time, 1 dated then holding every word first" in n
        for n in loose["notes"]
    )
    # said exactly, a time filters: January's is gone (the week's other document follows)
    assert [r["title"] for r in run(db_path, "search", "baked bread last week", env=env)["results"]] == [
        "weekend-bake",
        "weekend-hike",
    ]
    # alone, it lists its days
    assert [r["title"] for r in run(db_path, "search", "last weekend", env=env)["results"]] == [
        "weekend-hike",
        "weekend-bake",
    ]


def test_a_loose_time_keeps_the_order_of_what_it_holds(db_path: Path, tmp_path: Path) -> None:
    # a title match outranks passing mentions, dated then or not; all of them are dated then
    mentions = [(f"mention-{n}", date(2026, 3, 15), f"Bought bread and milk, list {n}.") for n in range(6)]
    index_notes(db_path, tmp_path / "notes", [("Bread", date(2026, 3, 14), "Notes."), *mentions])
    env = {"MEMDEX_NOW": "2026-03-18"}
    plain = [r["title"] for r in run(db_path, "search", "bread", "--limit", "3", env=env)["results"]]
    loose = [
        r["title"] for r in run(db_path, "search", "bread last weekend", "--limit", "3", env=env)["results"]
    ]
    assert plain[0] == "Bread" and loose == plain


def test_a_loose_time_beside_an_exact_one_filters_by_the_exact_one(db_path: Path, tmp_path: Path) -> None:
    days = {
        "tuesday-bake": date(2026, 3, 10),
        "saturday-bake": date(2026, 3, 14),
        "january-bake": date(2026, 1, 10),
    }
    index_notes(db_path, tmp_path / "notes", [(name, day, "Baked bread.") for name, day in days.items()])
    out = run(db_path, "search", "baked bread last week or last weekend", env={"MEMDEX_NOW": "2026-03-18"})
    assert [r["title"] for r in out["results"]] == ["saturday-bake", "tuesday-bake"]  # last week's
    dates = out["filters"]["dates"]
    assert (dates["words"], dates["since"], dates["until"]) == (["last week"], "2026-03-09", "2026-03-15")
    assert dates["loose"] == {"words": ["last weekend"], "since": "2026-03-13", "until": "2026-03-16"}


def test_a_loose_time_whose_words_match_nothing_lists_what_is_dated_then(
    db_path: Path, tmp_path: Path
) -> None:
    index_notes(
        db_path,
        tmp_path / "notes",
        [
            ("weekend-hike", date(2026, 3, 15), "A long hike by the lake."),
            ("weekend-word", date(2026, 1, 3), "Plans for the weekend."),
        ],
    )
    out = run(db_path, "search", "zzqqxx last weekend", env={"MEMDEX_NOW": "2026-03-18"})
    # not "weekend" searched as a word: the period's documents, found by their date
    assert [r["title"] for r in out["results"]] == ["weekend-hike"]


# -- the Serena corpus -----------------------------------------------------------------------
@pytest.mark.slow
def test_2026_on_serena_lists_the_documents_dated_2026_newest_first(serena_db: Path) -> None:
    conn = sqlite3.connect(serena_db)
    own = "SELECT d.id FROM documents d WHERE d.date LIKE '2026%'"
    mtime = (  # documents with no date of their own, by their file's modification time
        "SELECT d.id FROM documents d JOIN files f ON f.id = d.file_id WHERE d.date IS NULL"
        " AND strftime('%Y', f.mtime_ns / 1000000000, 'unixepoch') = '2026'"
    )
    expected = {r[0] for r in conn.execute(own)}
    by_mtime = {r[0] for r in conn.execute(mtime)}
    conn.close()
    out = run(serena_db, "search", "2026", "--limit", "5000")
    assert out["found"] == len(expected | by_mtime) == len(out["results"]) > 100
    assert {r["id"] for r in out["results"]} == expected | by_mtime
    assert {r["id"] for r in out["results"] if r["date_source"] == "mtime"} == by_mtime
    if by_mtime:
        assert f"; {len(by_mtime):,} of them dated by file time" in out["notes"][0]
    dates = [r["date"] for r in out["results"]]
    assert dates == sorted(dates, reverse=True)
    assert out["themes"] and all(set(t) == {"term", "count", "kind"} for t in out["themes"])
    counts = [t["count"] for t in out["themes"]]
    assert counts == sorted(counts, reverse=True) and counts[-1] >= 2
    may = run(serena_db, "search", "May 2026", "--limit", "100")
    assert may["found"] > 0 and all(r["date"].startswith("2026-05") for r in may["results"])


def test_themes_of_any_list_of_documents(sample: sqlite3.Connection) -> None:
    ids = [h.id for h in search(sample, "October").hits]
    assert [t.to_dict() for t in themes(sample, ids)] == [{"term": "chatgpt", "count": 3, "kind": "platform"}]
    one = themes(sample, ids[1:2])  # one document: its own terms
    assert {(t.term, t.kind) for t in one} >= {("deploy", "tag"), ("procedures/project", "namespace")}
    assert themes(sample, []) == []


# -- every door --------------------------------------------------------------------------------
def test_batch_lines_list_a_period_with_its_themes(sample: sqlite3.Connection) -> None:
    lines = list(run_batch(sample, ['{"id": 1, "query": "October"}', '{"id": 2, "query": "deploy keys"}']))
    assert [r["title"] for r in lines[0]["results"]] == OCTOBER
    assert lines[0]["themes"] == [{"term": "chatgpt", "count": 3, "kind": "platform"}]
    assert lines[0]["period"]["order"] == "newest first"
    assert "themes" not in lines[1]


@pytest.mark.slow
def test_mcp_search_knowledge_base_lists_a_period(sample: sqlite3.Connection, db_path: Path) -> None:
    from .test_mcp import over_stdio

    out = over_stdio(db_path, [("search_knowledge_base", {"query": "October"})])["calls"][0]
    assert not out["error"] and out["data"]["mode"] == "search"
    assert [r["title"] for r in out["data"]["results"]] == OCTOBER
    assert out["data"]["themes"] == [{"term": "chatgpt", "count": 3, "kind": "platform"}]


@pytest.mark.slow
def test_what_happened_in_october_is_a_dated_timeline(sample: sqlite3.Connection, db_path: Path) -> None:
    question = "what happened in October?"
    for env in (None, "server"):
        if env is None:
            out = run(db_path, "ask", question)
        else:
            with serving() as server:
                out = run(db_path, "ask", question, env=with_server(server))
            prompt = server.requests[0]["messages"][0]["content"]
            assert "what happened in a period: October" in prompt
            assert 'date_source="frontmatter"' in prompt
        answer = out["answer"]
        assert answer["period"] == "October" and answer["timeline"] is True
        assert answer["method"] == ("extractive" if env is None else "claude")
        dates = [s["date"] for s in answer["sources"]]
        assert dates == sorted(dates) and {s["title"] for s in answer["sources"]} == set(OCTOBER)
        assert assert_citations_resolve(answer) >= 4
        cited = [min(dates[c - 1] for c in d["citations"]) for d in answer["details"]]
        assert cited == sorted(cited)
    # extractive: every source, each detail under its date
    plain = run(db_path, "ask", question)["answer"]
    assert [d["text"][:11] for d in plain["details"]] == [s["date"][:10] + ":" for s in plain["sources"]]
    assert plain["summary"].startswith("What is dated October, oldest first: 6 sources.")


def test_a_question_about_a_period_with_nothing_in_it_says_so(
    sample: sqlite3.Connection, db_path: Path
) -> None:
    "A relative date is never searched as words: 'last week' with nothing in it is the answer (#26)."
    asked = CliRunner().invoke(
        cli, ["--db", str(db_path), "ask", "what happened last week?"], env={"MEMDEX_NOW": "2030-01-15"}
    )
    assert asked.exit_code == 1
    assert asked.stderr == (
        "Error: Nothing in the index is dated last week (2030-01-07 to 2030-01-13): ask about another time.\n"
    )


def test_the_date_source_of_older_indexes_is_filled_in_by_the_migration(sample: sqlite3.Connection) -> None:
    before = dict(sample.execute("SELECT id, date_source FROM documents").fetchall())
    sample.execute("UPDATE documents SET date_source = 'x'")
    _, _, sql = next(m for m in db.migrations() if m[1] == "0007_date_source")
    backfill = db.statements(sql)[1]
    sample.execute(backfill)
    after = dict(sample.execute("SELECT id, date_source FROM documents").fetchall())
    assert after == before  # what the parsers record, worked out from what was stored
    assert set(before.values()) == {None, "frontmatter", "conversation", "file name"}


# -- dated by file time; a relative date with nothing in it (issue 26) -------------------------------
THURSDAY = "2026-11-26"


def file_timed(tmp_path: Path, db_path: Path) -> Path:
    "Notes: one dated by nothing but its file's mtime (Thursday noon, UTC), one with a date of its own."
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "kestrel.md").write_text("# Kestrel\n\nA kestrel hovered over the verge for weeks.\n")
    noon = 1_795_694_400  # 2026-11-26T12:00:00Z
    os.utime(notes / "kestrel.md", (noon, noon))
    note(notes, "deploy-keys", date(2026, 10, 1), "Rotated the deploy keys; it took weeks.")
    conn = db.connect(db_path)
    index_paths(conn, [notes])
    conn.close()
    return notes


def test_a_note_dated_by_its_file_time_is_found_by_date_filters_and_queries(
    tmp_path: Path, db_path: Path
) -> None:
    file_timed(tmp_path, db_path)
    env = {"MEMDEX_NOW": THURSDAY}
    since = run(db_path, "search", "kestrel", "--since", THURSDAY, env=env)["results"]
    assert [(r["title"], r["date"], r["date_source"]) for r in since] == [
        ("Kestrel", "2026-11-26T12:00:00Z", "mtime")
    ]
    assert run(db_path, "search", "kestrel", "--until", "2026-11-25", env=env)["results"] == []
    for query in ("today", "this week", "November", "what happened in November 2026?"):
        listed = run(db_path, "search", query, env=env)
        assert [r["title"] for r in listed["results"]] == ["Kestrel"], query
        assert listed["notes"][0].endswith(
            "; 1 of them dated by file time (a file's modification time, which a copy or a checkout sets anew)"
        )
    text = CliRunner().invoke(cli, ["--db", str(db_path), "search", "today"], env=env).stdout
    assert "note · 2026-11-26 (dated by file time) · kestrel.md" in text
    assert (
        "why: layer 0 (date): dated 2026-11-26, from its file's modification time (dated by file time)"
        in text
    )


def test_a_relative_date_with_nothing_dated_then_says_so_and_never_searches_its_words(
    tmp_path: Path, db_path: Path
) -> None:
    "'3 weeks ago' once found every text holding 'weeks'; it names a time, never words."
    file_timed(tmp_path, db_path)
    env = {"MEMDEX_NOW": THURSDAY}
    result = CliRunner().invoke(cli, ["--db", str(db_path), "search", "3 weeks ago"], env=env)
    assert result.exit_code == 0
    assert "Found 0 results for '3 weeks ago'" in result.stdout
    assert "Note: nothing is dated 3 weeks ago (2026-11-02 to 2026-11-08)" in result.stdout
    out = run(db_path, "search", "3 weeks ago", env=env)
    assert out["results"] == [] and out["period"]["since"] == "2026-11-02"
    # with other words, the words are searched as text at any date (issue 25: LoCoMo's "what
    # did John do last year?" asked of conversations from 2023 found nothing)
    mixed = run(db_path, "search", "kestrel 3 weeks ago", env=env)
    assert Path(mixed["results"][0]["path"]).name == "kestrel.md"
    assert "dates" not in mixed["filters"]
    assert mixed["notes"][-1] == "nothing dated 3 weeks ago; searched those words as text"
    # a year may be a word: with nothing dated then, it is still searched as text
    assert (
        run(db_path, "search", "1999", env=env)["notes"][0]
        == "nothing dated 1999; searched those words as text"
    )
