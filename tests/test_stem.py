"""memdex.query.stem must tokenize and stem exactly as FTS5's porter unicode61 tokenizer does."""

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdex.query.stem import WORD, fold, prefix, split_words, stem, stems, words


def _sqlite_stems(texts: list[str]) -> list[list[str]]:
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(w, tokenize='porter unicode61 remove_diacritics 2')")
    conn.executemany("INSERT INTO t (rowid, w) VALUES (?, ?)", [(i + 1, t) for i, t in enumerate(texts)])
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    out: list[list[tuple[int, str]]] = [[] for _ in texts]
    for term, doc, offset in conn.execute("SELECT term, doc, offset FROM v"):
        out[doc - 1].append((offset, term))
    return [[term for _, term in sorted(row)] for row in out]


@pytest.mark.slow
def test_every_word_of_the_shared_corpora(shared_data: Path) -> None:
    vocabulary: set[str] = set()
    for folder in ("serena-memories", "chats", "mnemonic"):
        for path in (shared_data / folder).rglob("*"):
            if path.suffix in (".md", ".json"):
                vocabulary.update(words(path.read_text("utf-8", errors="replace")))
    with open(shared_data / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
        for _, line in zip(range(1500), f, strict=False):
            vocabulary.update(words(line))
    texts = sorted(vocabulary)
    assert len(texts) > 20_000
    expected = _sqlite_stems(texts)
    differ = [(t, e, stems(t)) for t, e in zip(texts, expected, strict=True) if e != stems(t)]
    assert differ == []
    # explain.py stems only words sharing a prefix with a query stem: that must lose nothing
    assert [t for t in texts if prefix(stem(t)) != t[: len(prefix(stem(t)))]] == []


@pytest.mark.parametrize(
    "text",
    [
        "Café CRÈME naïve",
        "eed need bleeding",
        "1990s 14days 03ms",
        "über straße",
        "ΑΘΗΝΑ tokyo東京",
        "x_y-z",
        "ﬁle ligature",
        "5 µg/ml",
        "Ǆemal",
    ],
)
def test_edge_cases(text: str) -> None:
    assert [stems(text)] == _sqlite_stems([text])


@pytest.mark.slow
@settings(max_examples=1000, deadline=None)
@given(st.text(st.characters(max_codepoint=127)) | st.text())
def test_split_words_are_those_of_the_pattern(text: str) -> None:
    "split_words() cuts most text without the regex (issue 16): the same words as WORD finds."
    assert split_words(text) == WORD.findall(text)
    assert words(text) == WORD.findall(fold(text))
