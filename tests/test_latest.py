"""What holds now (issue 37): "Where do I keep my old sneakers?" asks about the person as they
are, and the last thing they said of it is what holds. Among a chunk search's results about the
same thing the newest goes first and the older ones say which newer one speaks of it
(query/latest.py); a question about the past keeps the words' order. Claude exports written
under tmp_path, indexed into a real SQLite file."""

from __future__ import annotations

import sqlite3
from datetime import datetime
from pathlib import Path

import pytest

from memdex.answer.prompts import answer_prompt
from memdex.answer.sources import pack
from memdex.ingest.pipeline import index_paths
from memdex.models import Hit
from memdex.query.latest import newest_first, note
from memdex.query.search import search
from memdex.query.terms import asks_about_now, parse_query

from .conftest import claude_export

# By the words alone "box" goes first: it says "old sneakers" three times. "rack" said it once,
# two months later. "tools" is the newest, but shares only "keep" with the question: it is
# about something else and never goes before the others.
TALKS = {
    "box": (
        "2024-01-10T09:00:00+00:00",
        "My old sneakers: I keep my old sneakers in a box under the bed, the old sneakers live there.",
    ),
    "rack": (
        "2024-03-05T09:00:00+00:00",
        "I moved my old sneakers to a shoe rack in my closet, I keep them there.",
    ),
    "tools": ("2024-04-20T09:00:00+00:00", "I keep a box of tools in the garage."),
}


@pytest.fixture
def history(conn: sqlite3.Connection, tmp_path: Path) -> sqlite3.Connection:
    talks = {
        uuid: (datetime.fromisoformat(start), [said, "Noted, thanks for telling me."])
        for uuid, (start, said) in TALKS.items()
    }
    index_paths(conn, [claude_export(tmp_path / "chats", talks)])
    return conn


def _search(conn: sqlite3.Connection, question: str):  # type: ignore[no-untyped-def]
    return search(conn, question, limit=10, granularity="chunk", max_tokens=2000, full_text=True)


def test_the_newest_statement_about_a_thing_goes_first(history: sqlite3.Connection) -> None:
    result = _search(history, "Where do I keep my old sneakers?")
    keys = [h.key for h in result.hits]
    assert keys.index("rack") < keys.index("box")
    older = next(h for h in result.hits if h.key == "box")
    assert older.why_relevant["newer"]["key"] == "rack"
    assert older.why_relevant["newer"]["terms"] == ["keep", "old", "sneakers"]
    assert "older: Talk rack (2024-03-05) is newer" in older.why_relevant["summary"]
    assert any(note.startswith("newest first") for note in result.notes)
    scores = [h.score for h in result.hits]
    assert scores == sorted(scores, reverse=True)  # higher is still earlier


def test_a_newer_passage_about_something_else_keeps_its_place(history: sqlite3.Connection) -> None:
    result = _search(history, "Where do I keep my old sneakers?")
    keys = [h.key for h in result.hits]
    assert keys.index("tools") > keys.index("box")  # one shared word ("keep") is not the same thing
    assert all("newer" not in h.why_relevant for h in result.hits if h.key in ("rack", "tools"))


def test_a_question_about_the_past_keeps_the_words_order(history: sqlite3.Connection) -> None:
    result = _search(history, "Where did I keep my old sneakers before?")
    keys = [h.key for h in result.hits]
    assert keys.index("box") < keys.index("rack")
    assert all("newer" not in h.why_relevant for h in result.hits)
    assert not any(note.startswith("newest first") for note in result.notes)


def test_a_whole_conversation_search_is_not_reordered(history: sqlite3.Connection) -> None:
    result = search(history, "Where do I keep my old sneakers?", limit=10)
    assert [h.key for h in result.hits][0] == "box"
    assert all("newer" not in h.why_relevant for h in result.hits)


def test_a_model_is_told_which_source_is_newer(history: sqlite3.Connection) -> None:
    hits = _search(history, "Where do I keep my old sneakers?").hits
    sources = pack(history, hits, 2000)
    number = {s.hit.key: s.n for s in sources}
    prompt = answer_prompt("Where do I keep my old sneakers?", sources, timeline=False)
    assert f'newer_source="{number["rack"]}"' in prompt
    assert "the later statement is what holds now" in prompt
    box = next(line for line in prompt.splitlines() if 'title="Talk box"' in line)
    assert "newer_source" in box


@pytest.mark.parametrize(
    ("question", "about_now"),
    [
        ("How many musical instruments do I currently own?", True),
        ("Where do I keep my old sneakers?", True),  # about the asker, no time of its own
        ("What is the current record of the volleyball league?", True),  # says "current"
        ("Which editor does the team use now?", True),
        ("What was my previous goal for my Apex Legends level?", False),
        ("Before I bought the gravel bike, which bikes did I have?", False),
        ("What did I cook for my friend 10 days ago?", False),  # names a time
        ("What did I buy in May 2023?", False),
        ("What does Nate paint?", False),  # about someone else, nothing about now
        ("How do I configure ruff?", False),
        ("Where did I get my guitar serviced?", True),  # past tense, no time: the latest service
        ("What's the first thing on my to-do list now?", True),  # "now" says so
        ("How often did I play tennis previously, and how often now?", True),
        ("What do I need to pack before my trip?", True),  # "before my trip" is no past
        ("Do I go to the gym more often than I did previously?", False),
        ("How does the current cascade rank chunks?", True),  # what the code does now
    ],
)
def test_which_questions_ask_what_holds_now(question: str, about_now: bool) -> None:
    assert parse_query(question).about_now is about_now


def test_a_time_read_as_words_still_names_a_time() -> None:
    # nothing dated then: the next reading searches "May" and "2023" as words (query/search.py)
    assert parse_query("What did I buy in May 2023?", date_words=False).about_now is False


def test_a_time_named_is_read_before_the_words() -> None:
    # the words alone would say yes; the date makes it a question about that time
    assert asks_about_now("What did I cook 10 days ago?", about_asker=True) is False
    assert asks_about_now("What did I cook last week?", about_asker=True) is True
    assert parse_query("What did I cook last week?").about_now is False


def _hit(doc: int, date: str | None, *terms: str, score: float = 1.0) -> Hit:
    "A result of document ``doc`` dated ``date`` that holds the question's ``terms``."
    why = {"terms": [{"term": t, "fields": ["content"]} for t in terms], "summary": "layer 3"}
    return Hit(
        doc,
        f"k{doc}",
        "p",
        f"T{doc}",
        "chatgpt",
        None,
        None,
        [],
        date,
        score,
        0.5,
        3,
        why,
        "",
        None,
        None,
        0,
        0,
        date_source=None if date is None else "conversation",
    )


def _order(hits: list[Hit], words: list[str]) -> list[int]:
    return [h.id for h in newest_first(hits, words)]


def test_a_chain_of_restatements_goes_newest_first_each_marked_by_the_next() -> None:
    # B restates A (a, b); C restates B (e, f) but shares too little with A to replace it
    a = _hit(1, "2024-01-10T09:00:00Z", "a", "b", "c", "d", score=3.0)
    b = _hit(2, "2024-03-05T09:00:00Z", "a", "b", "e", "f", score=2.0)
    c = _hit(3, "2024-04-01T09:00:00Z", "e", "f", "g", score=1.0)
    assert _order([a, b, c], list("abcdefg")) == [3, 2, 1]
    assert b.why_relevant["newer"]["id"] == 3 and a.why_relevant["newer"]["id"] == 2
    assert "newer" not in c.why_relevant
    assert [h.score for h in (c, b, a)] == [3.0, 2.0, 1.0]  # the scores keep their places
    assert (
        note([c, b, a])
        == "newest first: the question asks what holds now; 2 older results say which newer one holds the same words"
    )


def test_what_cannot_be_ordered_by_date_keeps_its_place() -> None:
    undated = _hit(1, None, "a", "b")
    same_doc = [_hit(2, "2024-01-01T00:00:00Z", "a", "b"), _hit(2, "2024-01-01T00:00:00Z", "a", "b")]
    newer_undated = _hit(3, "2024-05-01T00:00:00Z", "a", "b")
    assert _order([undated, *same_doc], ["a", "b"]) == [1, 2, 2]
    assert _order([undated, newer_undated], ["a", "b"]) == [1, 3]  # an undated result is not older
    assert note(same_doc) is None


def test_a_day_without_a_time_is_not_older_than_a_time_that_day() -> None:
    day = _hit(1, "2024-03-05", "a", "b")
    later_that_day = _hit(2, "2024-03-05T09:00:00Z", "a", "b")
    assert _order([day, later_that_day], ["a", "b"]) == [1, 2]
    next_day = _hit(3, "2024-03-06T09:00:00Z", "a", "b")
    assert _order([day, next_day], ["a", "b"]) == [3, 1]


def test_words_that_ask_when_are_not_what_results_share() -> None:
    old = _hit(1, "2024-01-01T00:00:00Z", "current", "record")
    new = _hit(2, "2024-02-01T00:00:00Z", "current", "league")
    assert _order([old, new], ["current", "record", "league"]) == [1, 2]  # only "current" in common


def test_a_question_of_one_word_needs_only_that_word_shared() -> None:
    old = _hit(1, "2024-01-01T00:00:00Z", "passport")
    new = _hit(2, "2024-02-01T00:00:00Z", "passport")
    assert _order([old, new], ["passport", "now"]) == [2, 1]
    old, new = _hit(1, "2024-01-01T00:00:00Z", "passport"), _hit(2, "2024-02-01T00:00:00Z", "passport")
    assert _order([old, new], ["passport", "visa"]) == [1, 2]  # two words asked: two to share


def test_ordering_again_drops_the_marks_of_the_first() -> None:
    old = _hit(1, "2024-01-01T00:00:00Z", "a", "b")
    new = _hit(2, "2024-02-01T00:00:00Z", "a", "b")
    newest_first([old, new], ["a", "b"])
    summary = old.why_relevant["summary"]
    assert summary.count("; older: ") == 1
    newest_first([old], ["a", "b"])  # the newer one is gone (an answer's fused rounds)
    assert "newer" not in old.why_relevant and old.why_relevant["summary"] == "layer 3"


def test_an_answers_rounds_fused_are_ordered_newest_first_once_more(history: sqlite3.Connection) -> None:
    from memdex.answer.refine import Round, _fuse

    question = "Where do I keep my old sneakers?"
    first = _search(history, question)
    second = _search(history, "box under the bed")  # a later round that finds "box" and not "rack"
    assert [h.key for h in second.hits][0] == "box" and "rack" not in [h.key for h in second.hits]
    fused = _fuse([Round(1, question, first), Round(2, second.query, second)], limit=10, max_tokens=2000)
    keys = [h.key for h in fused.hits]
    assert keys.index("rack") < keys.index("box")  # found by both rounds, "box" would lead the fusion
    older = next(h for h in fused.hits if h.key == "box")
    assert older.why_relevant["newer"]["key"] == "rack"
    assert older.why_relevant["summary"].count("; older: ") == 1
    assert sum(n.startswith("newest first") for n in fused.notes) == 1
    scores = [h.score for h in fused.hits]
    assert scores == sorted(scores, reverse=True)
