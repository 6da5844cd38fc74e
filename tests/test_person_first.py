"""A question about whoever asks it (issue 37): "Which guitar do I own?" is answered by what
the person said in passing, not by the assistant's replies that repeat the question's words.
In a first-person question the person's own messages pack first (ranking.PERSON_WEIGHT),
unless it asks what the other side said ("which guitar did you say..."); a question about
someone else is packed as before. Claude exports written under tmp_path, indexed into a real
SQLite file."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memdex.ingest.pipeline import index_paths
from memdex.query import ranking
from memdex.query.search import search
from memdex.query.terms import asks_about_asker, parse_query

from .conftest import claude_export

# Each talk: what the person said, then the assistant's reply. "pedals" holds the question's
# word most and goes first whatever the question. Of the other two, the assistant's reply in
# "lesson" holds it more often than the person did in "strat", in a short message (no
# long-reply discount): by the words alone it packs next.
TALKS = {
    "pedals": (
        "Tell me about delay pedals, I keep reading about them.",
        "Delay pedals repeat the guitar: a guitar delay, the guitar again, a guitar echo, guitar.",
    ),
    "strat": (
        "My black Fender Stratocaster guitar needs new strings before Friday.",
        "Sure, happy to help with that.",
    ),
    "lesson": (
        "What should a first lesson cover?",
        "A first guitar lesson: guitar posture, guitar tuning and three chords.",
    ),
}
PERSON = {uuid: said for uuid, (said, _) in TALKS.items()}
REPLY = {uuid: reply for uuid, (_, reply) in TALKS.items()}


def _history(folder: Path) -> Path:
    "A Claude export: each talk on a day of its own, what the person said, then the reply."
    start = datetime.fromisoformat("2024-05-01T10:00:00+00:00")
    return claude_export(
        folder,
        {
            uuid: (start + timedelta(days=n), [said, reply])
            for n, (uuid, (said, reply)) in enumerate(TALKS.items())
        },
        minutes=1,
    )


@pytest.fixture
def history(conn: sqlite3.Connection, tmp_path: Path) -> sqlite3.Connection:
    index_paths(conn, [_history(tmp_path / "chats")])
    return conn


def _shown(conn: sqlite3.Connection, question: str) -> str:
    "The passages' text within a budget for about three short windows."
    result = search(conn, question, limit=10, granularity="chunk", max_tokens=80, full_text=True)
    assert result.total_tokens <= 80
    return "\n".join(h.text or "" for h in result.hits)


def test_a_question_about_the_asker_is_answered_by_what_they_said(history: sqlite3.Connection) -> None:
    shown = _shown(history, "Which guitar do I own?")
    assert PERSON["strat"] in shown  # what the person said of their guitar, in passing
    assert REPLY["pedals"] not in shown  # before another reply that repeats the word


def test_asking_what_the_other_side_said_packs_by_the_words(history: sqlite3.Connection) -> None:
    # the same key word ("guitar"; the rest are stopwords), but it asks for the assistant's words
    shown = _shown(history, "Which guitar did you say I own?")
    assert REPLY["pedals"] in shown and PERSON["strat"] not in shown


def test_a_question_about_someone_else_packs_by_the_words(history: sqlite3.Connection) -> None:
    # the same key word as "Which guitar do I own?" ("she" and "own" are stopwords)
    shown = _shown(history, "Which guitar does she own?")
    assert REPLY["pedals"] in shown and REPLY["lesson"] in shown
    assert PERSON["strat"] not in shown


@pytest.mark.parametrize(
    ("question", "about_asker"),
    [
        ("How many musical instruments do I currently own?", True),
        ("I'm anxious about Tokyo. Do you have any tips?", True),
        ("What did my sister recommend?", True),
        ("Can you recommend conferences I might find interesting?", True),
        ("how many instruments do i own", True),  # typed in lower case
        ("How many eggs did you say we need?", False),
        ("What was your advice for my trip?", False),
        ("I'm going back to our previous conversation about omelettes: how many eggs?", False),
        ("How do I configure ruff for this repository?", False),  # how to: the other side's answer
        ("Why do I/O errors stop the watcher?", False),
        ("I remember you told me to dilute tea tree oil: what ratio?", False),
        ("You mentioned a phone number for the Speyer tourism board, can I have it?", False),
        ("What mediums does Nate use to play games?", False),
        ("imagine a tool", False),  # "i" only inside a word
        ("", False),
    ],
)
def test_which_questions_are_about_the_asker(question: str, about_asker: bool) -> None:
    assert asks_about_asker(question) is about_asker
    assert parse_query(question).about_asker is about_asker


def test_the_weight_moves_only_the_persons_messages_and_only_when_asked() -> None:
    assert ranking.packing_score(3.0, "user", 40, about_asker=True) == 3.0 * ranking.PERSON_WEIGHT
    assert ranking.packing_score(3.0, "user", 40) == 3.0
    assert ranking.packing_score(3.0, "assistant", 40, about_asker=True) == 3.0
    long_reply = ranking.LONG_MESSAGE * 2
    assert ranking.packing_score(3.0, "assistant", long_reply, about_asker=True) == 1.5
