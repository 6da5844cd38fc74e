"""Every word a person writes is a query that answers (issue 35).

Previously ``memdex search deploy`` on a note saying "The deployment went fine" recursed until
Python gave up: porter stemmed the two words apart, "did you mean" suggested the word as
typed, and the search ran again with the same words, forever. Here: the doors that died, word
families, Chinese and Japanese, and a sweep of a real corpus's words and their forms through
the public API.
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import urllib.parse
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

import memdex
from memdex.doors.cli import cli
from memdex.query import search as searching
from memdex.query.search import search

from .test_serve import start_server, stop_server
from .test_serve_http import get

NOTES = {
    "release.md": "# Release notes\n\nThe deployment went fine.\n",
    "meeting.md": "# 会議\n\n東京でのミーティングは来週の火曜日です\n",
    "zurich.md": "# Café in Zürich\n\nWe met at the café. Ελληνικά lessons on Tuesday.\n",
    "build.md": "# Build\n\nPythonで書いたスクリプトを deploy する。\n",
}


@pytest.fixture
def notes_db(tmp_path: Path) -> Path:
    folder = tmp_path / "r"
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    db_path = tmp_path / "r.db"
    with memdex.Index(db_path) as index:
        index.index(folder)
    return db_path


def _search(db_path: Path, *args: str, input: str | None = None) -> str:
    result = CliRunner().invoke(cli, ["--db", str(db_path), *args], input=input, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


def _first(db_path: Path, query: str) -> str:
    found = json.loads(_search(db_path, "search", query, "--json"))
    return Path(found["results"][0]["path"]).name if found["results"] else ""


@pytest.mark.parametrize("query", ["deploy", "deploys", "deployed", "deploying", "how did we deploy?"])
def test_every_form_of_a_word_finds_the_note(notes_db: Path, query: str) -> None:
    found = json.loads(_search(notes_db, "search", query, "--json"))
    assert [Path(r["path"]).name for r in found["results"]][:1] == ["release.md"]
    assert found["typos"] is None  # found as written, not through "did you mean"


def test_ask_and_a_batch_with_the_word_answer(notes_db: Path) -> None:
    answer = json.loads(_search(notes_db, "ask", "how did we deploy?", "--json"))
    assert answer["mode"] == "answer"
    assert any(Path(r["path"]).name == "release.md" for r in answer["results"])
    lines = [
        json.dumps({"id": n, "query": q}) for n, q in enumerate(["deploy", "東京", "succes", "deployment"])
    ]
    replies = [
        json.loads(line)
        for line in _search(notes_db, "search", "--batch", "-", input="\n".join(lines)).splitlines()
    ]
    assert [r["id"] for r in replies] == [0, 1, 2, 3] and all("error" not in r for r in replies)


@pytest.mark.parametrize(
    ("query", "note"),
    [
        ("東京", "meeting.md"),
        ("ミーティング", "meeting.md"),
        ("火曜日", "meeting.md"),
        ("東京でのミーティング", "meeting.md"),
        ("東", "meeting.md"),  # one character: the pairs it begins
        ("スクリプト", "build.md"),
        ("python", "build.md"),
        ("deployment", "release.md"),  # "deploy" among Japanese, then the plain note: both hold it
        ("cafe", "zurich.md"),
        ("zurich", "zurich.md"),
        ("Zürich", "zurich.md"),
        ("ελληνικα", "zurich.md"),
        ("Ελληνικά", "zurich.md"),
    ],
)
def test_chinese_japanese_and_accents_are_found_by_a_word_inside(
    notes_db: Path, query: str, note: str
) -> None:
    found = json.loads(_search(notes_db, "search", query, "--json"))
    assert note in [Path(r["path"]).name for r in found["results"]]
    assert found["typos"] is None  # no "did you mean" of a word indexed as typed


def test_a_typo_search_says_what_it_searched_first(notes_db: Path) -> None:
    text = _search(notes_db, "search", "deploymnet")
    assert text.splitlines()[0] == (
        "Showing results for 'deployment' instead of 'deploymnet' (nothing matched the words as typed)"
    )
    found = json.loads(_search(notes_db, "search", "deploymnet", "--json"))
    assert found["query"] == "deploymnet" and found["searched_query"] == "deployment"
    assert found["found"] == 2 and found["typos"]["words"] == [
        {"typed": "deploymnet", "suggested": "deployment"}
    ]


@pytest.mark.slow
def test_the_server_answers_the_word_over_http(notes_db: Path) -> None:
    "Previously /search?q=deploy answered 500 (the recursion inside the server)."
    server = start_server(notes_db, "--read-only", "--http", "--port", "0")
    try:
        for query in ("deploy", "東京"):
            status, body, _ = get(server, "/search?" + urllib.parse.urlencode({"q": query}))
            assert status == 200 and json.loads(body)["results"], query
    finally:
        assert stop_server(server) == 0


# -- the sweep ------------------------------------------------------------------------------------
SUFFIXES = ("", "s", "ed", "ing", "ly", "ment")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    "How many readings each search tried (search._attempt), one entry a search."
    calls: list[int] = []
    once, whole = searching._attempt, searching._search

    def counting_once(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls[-1] += 1
        return once(*args, **kwargs)

    def counting_search(*args, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(0)
        return whole(*args, **kwargs)

    monkeypatch.setattr(searching, "_attempt", counting_once)
    monkeypatch.setattr(searching, "_search", counting_search)
    yield calls


@pytest.mark.slow
def test_words_of_a_real_corpus_and_their_forms_never_raise(
    serena: sqlite3.Connection, shared_data: Path, counted: list[int]
) -> None:
    """A sample of the Serena corpus's words and of words it does not hold (SciFact's), each
    with its -s, -ed, -ing, -ly and -ment forms, and Chinese from a real Gemini session:
    nothing raises, and no search tries more than the four readings of its query (as typed,
    dates as words, typos fixed, both). ``scripts/eval_words.py sweep`` asks 15,000 of them."""
    rng = random.Random(35)
    held = sorted(
        {
            w.lower()
            for p in (shared_data / "serena-memories").rglob("*.md")
            for w in re.findall(r"[^\W\d_]{3,}", p.read_text("utf-8"))
        }
    )
    lines = (shared_data / "scifact" / "corpus.jsonl").read_text("utf-8").splitlines()[:300]
    other = sorted(
        {w.lower() for line in lines for w in re.findall(r"[^\W\d_]{4,}", json.loads(line)["text"])}
        - set(held)
    )
    chinese = sorted(
        {
            w
            for p in (shared_data / "chats" / "gemini").rglob("*.json")
            for w in re.findall(r"[\u4e00-\u9fff]{1,6}", p.read_text("utf-8"))
        }
    )
    assert len(held) > 5000 and len(other) > 500 and len(chinese) > 20
    words = rng.sample(held, 160) + rng.sample(other, 60)
    queries = [w + s for w in words for s in SUFFIXES] + rng.sample(chinese, 20) + ["deploy", "succes"]
    for query in queries:
        result = search(serena, query, limit=3)
        assert result.found >= 0 and counted[-1] <= 4, query
    assert len(counted) == len(queries)
    assert max(counted) == 2  # some were searched again, by the nearest words: once, never more
