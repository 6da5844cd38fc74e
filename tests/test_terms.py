import sqlite3

import pytest

from memdex.query.terms import all_of, any_of, parse_query


def test_terms_and_stopwords() -> None:
    parsed = parse_query("What did we decide about the worktree isolation?")
    assert [t.text for t in parsed.key_terms] == ["decide", "worktree", "isolation"]
    assert [t.text for t in parsed.terms if t.stop] == ["what", "did", "we", "about", "the"]


def test_only_stopwords_keeps_them() -> None:
    assert [t.text for t in parse_query("what is it").key_terms] == ["what", "is", "it"]


def test_a_hyphenated_word_is_one_phrase() -> None:
    (term,) = parse_query("hook-suppression").terms
    assert term.tokens == ["hook", "suppression"]
    assert term.phrase == '"hook suppress"'  # its tokens (memdex.tokens): stemmed, as the index holds them


def test_month_and_year_words_become_date_filters() -> None:
    parsed = parse_query("outages in October 2025, and may we retry in May")
    assert parsed.years == ["2025"] and parsed.months == [10, 5]
    assert "may" in [t.text for t in parsed.terms]  # "may" the verb stays a word
    assert parse_query("2025 october", date_words=False).years == []


@pytest.mark.parametrize(
    "text, months, name",
    [
        ("When did June get her first shot?", [], ["June"]),  # someone called June
        ("what food is june eating now", [], ["june"]),
        ("October retro", [], ["October"]),
        ("in June", [6], []),
        ("notes from June", [6], []),
        ("June 2025 outage", [6], []),
        ("3 June outage", [6], []),
        ("outage June 3rd", [6], []),
        ("between March and June", [3, 6], []),
        ("June", [6], []),  # nothing else to search for: the month is the question
        ("what happened? June", [6], []),
    ],
)
def test_a_month_word_is_a_date_where_it_reads_as_one(text: str, months: list[int], name: list[str]) -> None:
    parsed = parse_query(text)
    assert parsed.months == months
    assert parsed.month_names == name
    words = [t.text for t in parsed.terms]
    assert all(n.casefold() in words for n in name)  # a name is searched as a word


@pytest.mark.parametrize(
    "text, key",
    [
        ("When is Jon's group performing?", ["jon", "group", "performing"]),
        ("What are Melanie's pets' names?", ["melanie", "pets", "names"]),
        ("Grandma’s gift", ["grandma", "gift"]),  # a typographic apostrophe
        ("what's the plan", ["plan"]),  # "what" is a stopword, with or without its 's
        ("O'Brien notes", ["o'brien", "notes"]),  # an apostrophe inside a word stays
    ],
)
def test_a_possessive_is_its_word(text: str, key: list[str]) -> None:
    """FTS5 splits "Jon's" into "jon" and "s": as a phrase it found only the possessive, never
    "Jon" alone (in LoCoMo every message starts "Jon: ..."; issue 25)."""
    assert [t.text for t in parse_query(text).key_terms] == key


def test_a_possessive_matches_its_word_and_counts_the_possessive_more(conn: sqlite3.Connection) -> None:
    "Jon's finds every text with Jon; one that says Jon's itself ranks first (BM25 counts it twice)."
    (term,) = parse_query("Jon's").terms
    assert term.phrase == '("jon" OR "jon s")'
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, tokenize='porter unicode61')")
    conn.executemany(
        "INSERT INTO t VALUES (?)",
        [("Jon: we met at the studio.",), ("Jon's studio opened today.",), ("Nothing.",)],
    )
    rows = conn.execute("SELECT body FROM t WHERE t MATCH ? ORDER BY bm25(t)", (term.phrase,)).fetchall()
    assert [r[0] for r in rows] == ["Jon's studio opened today.", "Jon: we met at the studio."]


def test_a_month_name_in_the_possessive_is_a_name() -> None:
    '"of June\'s vet" is someone\'s vet, not a month: "of June" alone would read as a date.'
    parsed = parse_query("What's the name of June's vet?")
    assert parsed.months == [] and "june" in [t.text for t in parsed.key_terms]


HOSTILE = [
    '"',
    '""',
    "'",
    "AND",
    "OR NOT",
    "NEAR(",
    "NEAR(a b",
    "*",
    "a*",
    "-x",
    "col:",
    "title:x",
    "^",
    "\x00",
    "a\x00b",
    "🦜🦜",
    "مرحبا بالعالم",
    "(((",
    ")",
    "{}",
    "a + b",
    "x" * 10_000,
    " ".join(["word"] * 2000),
    "\\",
    "%",
    "_",
    "a AND OR b",
    '"unbalanced quote',
]


@pytest.mark.parametrize("text", HOSTILE)
def test_no_input_is_an_fts5_syntax_error(text: str) -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(a, tokenize='porter unicode61 remove_diacritics 2')")
    conn.execute("INSERT INTO t VALUES ('word and near col x')")
    terms = parse_query(text).key_terms
    for expression in (all_of([[t] for t in terms]), any_of([[t] for t in terms])):
        if expression:
            conn.execute("SELECT * FROM t WHERE t MATCH ?", (expression,)).fetchall()
