"""A question that names a short time (issue 37): "What kitchen appliance did I buy 10 days
ago?" asked of a history whose conversation that day says "I just got a smoker today" -- no
word shared. The words' matches in that period come first; the period's other documents follow
them, found by their date alone (layer 0), each conversation by what the person said then.
Claude exports written under tmp_path, indexed into a real SQLite file."""

from __future__ import annotations

import sqlite3
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from memdex.ingest.pipeline import index_paths
from memdex.query.search import search

from .conftest import claude_export

FILLER = (
    "That sounds like a good plan. Start small, keep notes of what works and what does not, "
    "and come back to it after a week or two when you know more about what you need."
)
TALKS = {  # uuid -> (day, what the person said first)
    "buy-day": ("2023-03-15", "Which store should I buy groceries from for the week? I want to spend less."),
    "smoker": ("2023-03-15", "I'm after new BBQ sauce recipes. By the way, I just got a smoker today!"),
    "books": ("2023-03-15", "Can you recommend a thriller? I finished The Silent Patient last night."),
    "older": (
        "2023-03-01",
        "I got a new blender and a rice cooker for the kitchen, which should I use more?",
    ),
}


def _history(folder: Path) -> Path:
    "A Claude export: each talk four messages, the person's first, two minutes apart."
    return claude_export(
        folder,
        {
            uuid: (
                datetime.fromisoformat(f"{day}T10:00:00+00:00") + timedelta(minutes=n),
                [first, FILLER, "Thanks, I will try that.", FILLER],
            )
            for n, (uuid, (day, first)) in enumerate(TALKS.items())
        },
    )


@pytest.fixture
def history(conn: sqlite3.Connection, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> sqlite3.Connection:
    index_paths(conn, [_history(tmp_path / "chats")])
    monkeypatch.setenv("MEMDEX_NOW", "2023-03-25")
    return conn


QUESTION = "What kitchen appliance did I buy 10 days ago?"


def test_the_periods_other_conversations_follow_the_matches(history: sqlite3.Connection) -> None:
    result = search(history, QUESTION, limit=10)
    keys = [h.key for h in result.hits]
    assert keys[0] == "buy-day"  # "buy", dated then: the words' match first
    assert set(keys[1:]) == {"smoker", "books"}  # then the day's others; never the older talk
    smoker = next(h for h in result.hits if h.key == "smoker")
    assert smoker.match_layer == 0 and smoker.why_relevant["match"] == "date"
    assert "dated in the period asked about" in smoker.why_relevant["summary"]
    assert smoker.relevance < result.hits[0].relevance
    assert any("2 more dated 10 days ago (2023-03-15) share no word" in n for n in result.notes)


def test_in_passages_a_conversation_found_by_its_date_gives_what_the_person_said(
    history: sqlite3.Connection,
) -> None:
    result = search(history, QUESTION, limit=10, granularity="chunk", max_tokens=2000, full_text=True)
    smoker = next(h for h in result.hits if h.key == "smoker")
    window = smoker.matching_chunks[0]["window"]
    said = [m for m in window["messages"] if m["role"] == "user"]
    assert said and said[0]["n"] == 0  # the person's message, with its context
    assert "I just got a smoker today" in (smoker.text or "")
    words = [h.key for h in result.hits if h.match_layer != 0]
    assert words and result.hits[: len(words)] == [h for h in result.hits if h.match_layer != 0]


def test_no_fill_when_the_words_fill_the_page_or_the_period_is_long(history: sqlite3.Connection) -> None:
    assert [h.key for h in search(history, QUESTION, limit=1).hits] == ["buy-day"]
    month = search(history, "what did I buy in the past 30 days", limit=10)  # more than 7 days
    assert all(h.match_layer != 0 for h in month.hits)
    assert {h.key for h in month.hits} >= {"buy-day"} and "smoker" not in {h.key for h in month.hits}
