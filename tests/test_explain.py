"""Snippets by the words that can match (issue 16): the same snippet, marks and window as
reading every word of the text, which a long abstract made the costliest part of a search."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdex.query.explain import SNIPPET_WORDS, Explainer
from memdex.query.terms import parse_query
from memdex.tokens import WORD, fold, tokens


def every_word_snippet(explainer: Explainer, text: str) -> str:
    "The snippet as it was made before: every word folded and tested, every window counted."
    spans = []
    for m in WORD.finditer(text):
        found = [t[0] if t[:1] in explainer.singles else t for t in tokens(fold(m.group()))]
        found = [t for t in found if t in explainer.marked]
        spans.append((m.start(), m.end(), found[0] if found else ""))
    if not spans:
        return ""
    hits = [i for i, (_, _, s) in enumerate(spans) if s in explainer.marked]
    start = 0
    if hits:
        best, best_count = hits[0], 0
        for i in hits:
            window = {spans[j][2] for j in hits if i <= j < i + SNIPPET_WORDS}
            if len(window) > best_count:
                best, best_count = i, len(window)
        start = max(0, best - 4)
    end = min(len(spans), start + SNIPPET_WORDS)
    out, cursor = [], spans[start][0]
    for i in range(start, end):
        s, e, st_ = spans[i]
        out.append(text[cursor:s])
        out.append(explainer.mark(text[s:e]) if st_ in explainer.marked else text[s:e])
        cursor = e
    body = " ".join("".join(out).split())
    return ("…" if start > 0 else "") + body + ("…" if end < len(spans) else "")


# Words that fold, stem and case in every way the snippet must follow: accents, ligatures,
# the Kelvin sign, a dotted capital I, a long s, Greek, digits and underscores, words whose stem
# begins otherwise (dying), CJK runs and CJK beside letters.
PIECES = ["deploy", "Deploying", "DEPLOYED", "rollback", "roll", "back", "Kelvin", "\u212aelvin", "İstanbul",
          "ſtop", "stop", "Straße", "µg", "μg", "naïve", "Naive", "ﬁle", "file", "café", "CAFE",
          "e\u0301x", "Ωmega", "a_b", "42nd", "über", "dying", "die", "東京", "東京都", "ミーティング",
          "pythonで", "ｶﾞｽ", "ガス", " ", " ", ", ", ".\n", "\n\n"]  # fmt: skip


@pytest.mark.slow
@settings(max_examples=600, deadline=None)
@given(
    st.lists(st.sampled_from(PIECES), max_size=80), st.lists(st.sampled_from(PIECES), min_size=1, max_size=4)
)
def test_snippet_and_tokens_are_those_of_every_word(text_pieces: list[str], query_pieces: list[str]) -> None:
    terms = parse_query(" ".join(query_pieces)).key_terms
    explainer = Explainer(terms)
    text = "".join(text_pieces)
    assert explainer.snippet(text) == every_word_snippet(explainer, text)
    # the words it does not stem are those that cannot match; the rest are the index's tokens
    every = tokens(text)
    made = explainer.tokens(text)
    assert len(made) == len(every)
    # (and a pair a CJK character asked alone begins reads as that character)
    assert all(
        m == t or (m == "" and t not in explainer.marked) or (m == t[0] and m in explainer.singles)
        for m, t in zip(made, every, strict=True)
    )
    # a result's snippet reuses the tokens its chunk was ranked by
    assert explainer.snippet(text, explainer.tokens(text)) == every_word_snippet(explainer, text)


@pytest.mark.slow
def test_snippets_of_scifact_abstracts(shared_data: Path) -> None:
    """Long abstracts with many matches, a few with accents and Greek: as every word made them.

    Every one of 400 abstracts (89 with accents, 33 with Greek) against each of 12 claims:
    4,800 snippets, half of them with marks. 40 claims took three times as long and caught
    nothing more: a window chosen on a tie, one that forgets a match leaving it, one that
    starts a word early or an ellipsis a word late each fail on the first claim."""
    docs = [
        json.loads(line) for line in (shared_data / "scifact" / "corpus.jsonl").read_text().splitlines()[:400]
    ]
    claims = [
        json.loads(line)["text"]
        for line in (shared_data / "scifact" / "queries-train.jsonl").read_text().splitlines()[:12]
    ]
    for claim in claims:
        explainer = Explainer(parse_query(claim).key_terms)
        for doc in docs:
            expected = every_word_snippet(explainer, doc["text"])
            assert explainer.snippet(doc["text"]) == expected
            assert explainer.snippet(doc["text"], explainer.tokens(doc["text"])) == expected


@pytest.mark.parametrize(
    ("text", "snippet"),
    [
        ("We deployed it. Then the rollback.", "We «deployed» it. Then the «rollback»"),
        ("Über die Straße, café.", "Über die «Straße», «café»"),
        ("", ""),
    ],
)
def test_marks(text: str, snippet: str) -> None:
    assert Explainer(parse_query("deploy rollback straße cafe").key_terms).snippet(text) == snippet


@pytest.mark.parametrize(
    ("query", "snippet"),
    [
        ("東京", "会議は«東京»でのミーティングです。Deploy のあと"),
        ("ミーティング 会議", "«会議»は東京での«ミーティング»です。Deploy のあと"),
        ("東", "会議は«東»京でのミーティングです。Deploy のあと"),
        ("deploying", "会議は東京でのミーティングです。«Deploy» のあと"),
        ("京都", "会議は東京でのミーティングです。Deploy のあと"),
    ],
)
def test_in_chinese_and_japanese_only_what_matched_is_marked(query: str, snippet: str) -> None:
    "A CJK run has no spaces, so it is one word of the text: its matched characters are marked (#35)."
    explainer = Explainer(parse_query(query).key_terms)
    assert explainer.snippet("会議は東京でのミーティングです。Deploy のあと") == snippet
