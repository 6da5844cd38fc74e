"""memdex.tokens: what a token is, the same for what is indexed and what is asked (issue 35).

FTS5 is handed tokens memdex made and must keep them as they are (the ascii tokenizer);
word families are one token; CJK runs are their pairs of characters; folding is one rule."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdex.tokens import (
    WORD,
    fold,
    index_text,
    phrase,
    prefixes_of,
    split_words,
    stem,
    tokens,
    tokens_among,
    word_tokens,
    words,
)


def _fts5_tokens(texts: list[str]) -> list[list[str]]:
    "What FTS5, declared as the index declares its tables, stores for each text memdex hands it."
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(w, tokenize='ascii')")
    conn.executemany(
        "INSERT INTO t (rowid, w) VALUES (?, ?)", [(i + 1, index_text(t)) for i, t in enumerate(texts)]
    )
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    out: list[list[tuple[int, str]]] = [[] for _ in texts]
    for term, doc, offset in conn.execute("SELECT term, doc, offset FROM v"):
        out[doc - 1].append((offset, term))
    return [[term for _, term in sorted(row)] for row in out]


def _vocabulary(shared_data: Path) -> list[str]:
    found: set[str] = set()
    for folder in ("serena-memories", "chats", "mnemonic"):
        for path in (shared_data / folder).rglob("*"):
            if path.suffix in (".md", ".json", ".jsonl"):
                found.update(WORD.findall(path.read_text("utf-8", errors="replace")))
    with open(shared_data / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
        for _, line in zip(range(1500), f, strict=False):
            found.update(WORD.findall(line))
    return sorted(found)


@pytest.mark.slow
def test_fts5_keeps_every_token_of_the_shared_corpora(shared_data: Path) -> None:
    "Every word of the corpora (Chinese, Japanese, Greek, accents among them) as made here."
    vocabulary = _vocabulary(shared_data)
    assert len(vocabulary) > 20_000
    assert any(word_tokens(fold(w)) != [stem(fold(w))] for w in vocabulary)  # CJK is among them
    stored = _fts5_tokens(vocabulary)
    assert [(w, s) for w, s in zip(vocabulary, stored, strict=True) if s != tokens(w)] == []
    # explain.py stems only words whose first letters a looked-for token allows: that loses none
    lost = [
        w
        for w in words(" ".join(vocabulary))
        for t in word_tokens(w)
        if not (w[:2] in prefixes_of(t) or t in tokens_among(w, prefixes_of(t)))
    ]
    assert lost == []


@pytest.mark.parametrize(
    "family",
    [
        ["deploy", "deploys", "deployed", "deploying", "deployment", "deployments"],
        ["correct", "correctly", "correction"],
        ["random", "randomly"],
        ["success", "successful", "successfully"],
        ["emotional", "emotionally"],
        ["memory", "memories"],
        ["die", "dying", "dies"],
    ],
)
def test_a_word_family_is_one_token(family: list[str]) -> None:
    assert {tuple(tokens(w)) for w in family} == {tuple(tokens(family[0]))}


@pytest.mark.parametrize(
    ("typed", "indexed"),
    [
        ("cafe", "café"),
        ("Zürich", "zurich"),
        ("strasse", "Straße"),
        ("file", "ﬁle"),  # a ligature
        ("python", "Ｐｙｔｈｏｎ"),  # full width
        ("ελληνικα", "Ελληνικά"),
        ("ΟΔΟΣ", "οδός"),  # a final sigma
        ("istanbul", "İstanbul"),
        ("ガス", "ｶﾞｽ"),  # half-width kana
    ],
)
def test_folding_is_one_rule_both_ways(typed: str, indexed: str) -> None:
    assert tokens(typed) == tokens(indexed)


def test_kana_keep_their_marks_and_hangul_stays_whole() -> None:
    assert tokens("ガス") != tokens("カス")
    assert tokens("서울에서") == ["서울", "울에", "에서"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("東京でのミーティング", ["東京", "京で", "での", "のミ", "ミー", "ーテ", "ティ", "ィン", "ング"]),
        ("猫", ["猫"]),
        ("Pythonで書いた code", ["python", "で書", "書い", "いた", "code"]),
        ("2024年の東京", ["2024", "年の", "の東", "東京"]),
        ("deploys, 東京。Deployments", ["deploy", "東京", "deploy"]),
    ],
)
def test_cjk_runs_are_pairs_of_characters(text: str, expected: list[str]) -> None:
    assert tokens(text) == expected
    assert _fts5_tokens([text]) == [expected]


def test_a_phrase_is_always_fts5_syntax() -> None:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(w, tokenize='ascii')")
    conn.execute(
        "INSERT INTO t (rowid, w) VALUES (1, ?)", (index_text("東京でのミーティングは来週の火曜日です"),)
    )
    for typed, found in [
        (["東京"], 1),
        (["ミーティング"], 1),
        (["東"], 1),
        (["京"], 1),
        (["大阪"], 0),
        (['"', "AND"], 0),
    ]:
        got = conn.execute("SELECT count(*) FROM t WHERE t MATCH ?", (phrase(typed),)).fetchone()[0]
        assert got == found, typed
    assert phrase([]) == '""'


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(st.text(st.characters(max_codepoint=127)) | st.text())
def test_split_words_are_those_of_the_pattern(text: str) -> None:
    "split_words() cuts most text without the regex (issue 16): the same words as WORD finds."
    assert split_words(text) == WORD.findall(text)
    assert words(text) == WORD.findall(fold(text))


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_any_text_is_tokens_fts5_keeps(text: str) -> None:
    assert _fts5_tokens([text]) == [tokens(text)]
    assert all(t and " " not in t for t in tokens(text))
