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
    ],
)
def test_which_questions_ask_what_holds_now(question: str, about_now: bool) -> None:
    assert parse_query(question).about_now is about_now


def test_a_time_named_is_read_before_the_words() -> None:
    # the words alone would say yes; the date makes it a question about that time
    assert asks_about_now("What did I cook 10 days ago?", about_asker=True) is False
    assert asks_about_now("What did I cook last week?", about_asker=True) is True
    assert parse_query("What did I cook last week?").about_now is False
