"""What to try instead when a search finds little: the indexed words a mistyped word may have
meant ("did you mean"), the values a filter can take here, the budget the first result needs.

Did you mean. The index's vocabulary is FTS5's own (``chunks_vocab``, ``documents_vocab``:
the tokens ``memdex.tokens`` makes), so a typed word is made a token the same way and
compared stem to stem by edit distance, a swap of two adjacent letters counting as one edit
("rebsae" -> "rebase", "conflcit" -> "conflict"). The cost is bounded: only words of
MIN_LETTERS or more with no digit, that no document holds and that no synonym stands in for,
at most MAX_WORDS of them; candidates share the word's first letter (one range of the FTS5
index read, not all of it), are at most MAX_EDITS longer than its stem and ENDING shorter
than the word (a typo in an ending the stemmer cuts: "configuraiton"), MAX_CANDIDATES at most from
each vocabulary. The stem found is shown as a word read from a few passages that hold it,
and kept only if that word too is near the word typed. On the Serena corpus (981 files, 8,076
passage stems) "rebsae conflcit" spends ~11 ms finding "rebase conflict", as long as the
search for those words takes; a query whose words are all indexed, 0.4 ms (one indexed read a
word). Measured with a fresh connection a query, median of 40, on a loaded 2-core machine.

A suggestion is a note. With ``fix_typos`` (``--fix-typos``), or when nothing at all matched
the words as typed, the suggested words are searched instead, and the notes and the JSON
(``typos``) say so.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memdex.models import Candidate, SearchResult
from memdex.query.request import Filters, SearchRequest
from memdex.query.results import build_hits
from memdex.query.terms import Term
from memdex.store import db
from memdex.tokens import fold, has_cjk, stem, tokens, words

MIN_LETTERS = 4  # shorter words have too many near neighbours to guess from
MAX_WORDS = 8  # words of one query looked at, at most
MAX_EDITS = 2  # a word of 6 letters or more; 1 below that
MAX_CANDIDATES = 5000  # stems read from each vocabulary table for one word
ENDING = 6  # letters the stemmer may cut off a word ("configurations" -> "configur": 6)
TRIES = 3  # nearest stems whose written form is checked against the word as typed
FAR = 99  # edits of a stem too far from the word to be a candidate
SHOWN_VALUES = 8  # filter values named in a note, nearest first
ECHO = 80  # characters of a suggested query a note quotes


@dataclass
class Typos:
    "The words of a query no document holds, each with the nearest indexed word."

    typed: str  # the query as typed
    words: dict[str, str] = field(default_factory=dict)  # word as typed -> suggested word
    searched: str = ""  # why the suggestion was searched instead, or "" if it was not

    @property
    def query(self) -> str:
        "The query with each word replaced by its suggestion."
        text = self.typed
        for typed, suggested in self.words.items():
            pattern = rf"(?<![^\W_]){re.escape(typed)}(?![^\W_])"  # the whole word, as unicode61 splits
            text = re.sub(pattern, suggested.replace("\\", "\\\\"), text)
        return text

    def changes_words(self) -> bool:
        "Does the suggested query search other tokens than the query as typed?"
        return tokens(self.query) != tokens(self.typed)

    def note(self) -> str:
        fixed = self.query
        if len(fixed) > ECHO:  # a long query: only the words
            fixed = ", ".join(f"{s} for {t}" for t, s in self.words.items())
        if self.searched:
            return f"searched “{fixed}” instead ({self.searched})"
        return f"did you mean: {fixed}?"

    def to_dict(self) -> dict[str, Any]:
        return {
            "words": [{"typed": t, "suggested": s} for t, s in self.words.items()],
            "suggested_query": self.query,
            "searched_instead": bool(self.searched),
            "why": self.searched or None,
            "note": self.note(),
        }


def searched_instead(typos: Typos, fixed: SearchResult, request: SearchRequest) -> SearchResult:
    "The result of searching the suggested words, saying so first: what was typed, what was searched."
    typos.searched = "--fix-typos" if request.fix_typos else "nothing matched the words as typed"
    fixed.query = request.query
    fixed.searched_query = typos.query  # the first thing the text says; the JSON's searched_query
    fixed.notes.insert(0, typos.note())
    fixed.typos = typos.to_dict()
    return fixed


def suggested(typos: Typos, result: SearchResult) -> SearchResult:
    "The result of the words as typed, with the nearest indexed words as a note."
    result.notes.append(typos.note())
    result.typos = typos.to_dict()
    return result


def find_typos(conn: sqlite3.Connection, query: str, terms: list[Term]) -> Typos | None:
    "The words of the terms (synonyms filled in) no document holds, and what they may have meant."
    known = db.memo(conn, "vocabulary")  # stem -> held; word -> suggestion, while the index is unchanged
    typos = Typos(query)
    looked = 0
    for term in terms:
        if term.stop or any(_held(conn, t, known) for s in term.synonyms for t in s.tokens):
            continue
        for token in term.tokens:
            word = fold(token)
            if len(word) < MIN_LETTERS or any(c.isdigit() for c in word) or has_cjk(word):
                continue  # no spelling to correct in digits, or in CJK's characters
            if _held(conn, word, known):
                continue
            if token in typos.words or looked >= MAX_WORDS:
                continue
            looked += 1
            if ("near", word) not in known:
                known["near", word] = nearest(conn, word)
            near = known["near", word]
            # a suggestion is other words than those typed, or none: searching it again would
            # only search the same tokens (issue 35: "deploy" suggested "deploy", forever)
            if near and tokens(near) != tokens(word):
                typos.words[token] = near
    return typos if typos.words else None


def _held(conn: sqlite3.Connection, word: str, known: dict[Any, Any]) -> bool:
    "Does the index hold every token of ``word``?"
    for term in tokens(word):
        if term not in known:
            known[term] = bool(conn.execute(db.query("vocab_has"), {"term": term}).fetchone()[0])
        if not known[term]:
            return False
    return True


def nearest(conn: sqlite3.Connection, word: str) -> str | None:
    "The indexed word nearest ``word`` (folded), as written in the index; None if none is near."
    target = stem(word)
    most = MAX_EDITS if len(word) >= 6 else 1
    params = {
        "low": target[0],
        "high": chr(ord(target[0]) + 1),
        "shortest": max(3, min(len(target) - most, len(word) - ENDING)),
        "longest": len(target) + most,
        "cap": MAX_CANDIDATES,
    }
    stem_letters, word_letters = set(target), set(word)
    docs: Counter[str] = Counter()
    for term, doc in conn.execute(db.query("vocab_near"), params):
        # An edit changes the set of letters used by two at most: a cheap test that spares
        # most candidates the edit distance (on Serena, 10 ms -> 2.5 ms a word).
        if len(stem_letters.symmetric_difference(term)) <= 2 * most or len(set(term) - word_letters) <= 1:
            docs[term] += doc
    scored = sorted((_edits(word, target, term, most), -doc, term) for term, doc in docs.items())
    for edits, _, term in scored[:TRIES]:
        if edits == FAR:
            break
        written = _as_written(conn, term, word)
        # near as stems, near as words too: "quartz" is not "quantization" (stem "quantiz")
        if distance(word, written, most) <= most:
            return written
    return None


def _edits(word: str, target: str, term: str, most: int) -> int:
    """Edits from the typed word's stem to an indexed stem; or, where a typo in its ending
    changed how the word stems ("configuraiton" keeps its ending, "configuration" is stemmed
    to "configur"), ``most`` plus the edits from the word's beginning to the stem; else FAR."""
    edits = distance(target, term, most)
    if edits <= most:
        return edits
    if len(term) < len(word) and distance(word[: len(term)], term, 1) <= 1:
        return most + distance(word[: len(term)], term, 1)
    return FAR


def _as_written(conn: sqlite3.Connection, term: str, typed: str) -> str:
    "The word behind an indexed stem, read from text that holds it: the form nearest what was typed."
    forms: Counter[str] = Counter()
    match = '"' + term.replace('"', '""') + '"*'
    for (text,) in conn.execute(db.query("vocab_text"), {"match": match}):
        # a word and its stem share their first letter: stem only those
        forms.update(w for w in words(text) if w[:1] == term[:1] and stem(w) == term)
    if not forms:
        return term
    return min(forms, key=lambda w: (distance(typed, w, len(w) + len(typed)), -forms[w], w))


def distance(a: str, b: str, most: int) -> int:
    """Edits from ``a`` to ``b`` (insert, delete, replace a letter, swap two adjacent ones: the
    optimal string alignment distance); ``most + 1`` as soon as it must be more than ``most``."""
    if abs(len(a) - len(b)) > most:
        return most + 1
    # What both share at either end needs no edit; a typo leaves a short middle to align
    # (half the time of aligning the whole words, on Serena's candidates).
    start, shorter = 0, min(len(a), len(b))
    while start < shorter and a[start] == b[start]:
        start += 1
    end = 0
    while end < shorter - start and a[-1 - end] == b[-1 - end]:
        end += 1
    a, b = a[start : len(a) - end], b[start : len(b) - end]
    before: list[int] = []
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        here = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            here[j] = min(row[j] + 1, here[j - 1] + 1, row[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                here[j] = min(here[j], before[j - 2] + 1)
        if min(here) > most:
            return most + 1
        before, row = row, here
    return min(row[-1], most + 1)


# Filters whose value can name nothing in the index, as the notes name them.
_FILTER_NAMES = {
    "namespace": "namespaces",
    "platform": "platforms",
    "type": "types",
    "project": "projects",
    "branch": "branches",
}


def filter_notes(conn: sqlite3.Connection, filters: Filters) -> list[str]:
    """For each filter value no document has, a note naming the values the index does have,
    nearest first (as "did you mean" measures it): ``--platform chatgtp`` is told chatgpt."""
    notes = []
    for name, plural in _FILTER_NAMES.items():
        value = getattr(filters, name)
        if value is None:
            continue
        alone = Filters(**{name: value}).params()
        if conn.execute(db.query("filter_matches"), alone).fetchone()[0]:
            continue
        values: Counter[str] = Counter()
        for held, documents in conn.execute(db.query("filter_values"), {"field": name}):
            values[str(held)] += documents
            parts = str(held).split("/")
            for n in range(1, len(parts) if name == "namespace" else 1):  # a namespace takes those under it
                values["/".join(parts[:n])] += documents
        typed = value.casefold()
        big = len(typed) + max(map(len, values), default=0)
        ranked = sorted(values, key=lambda v: (distance(typed, v.casefold(), big), -values[v], v))
        shown = ", ".join(ranked[:SHOWN_VALUES])
        more = f" and {len(ranked) - SHOWN_VALUES:,} more" if len(ranked) > SHOWN_VALUES else ""
        listed = (
            f"{plural} in this index, nearest first: {shown}{more}" if values else f"no document has a {name}"
        )
        notes.append(f"no documents of {name} {value} here; {listed}")
    return notes


def budget_note(conn: sqlite3.Connection, first: Candidate, terms: list[Term], request: SearchRequest) -> str:
    """Why a search with matches shows none: the first result alone is over --max-tokens. It is
    not cut to fit: its tokens are what reading it costs (read part of it with ``memdex show``
    or get_document and their own max_tokens)."""
    hits, _ = build_hits(conn, [first], terms, request.granularity, None, False)
    need = hits[0].est_tokens if hits else 0
    return (
        f"the first result needs ~{need:,} tokens, more than the --max-tokens budget of "
        f"{request.max_tokens:,}: raise --max-tokens to {need:,} or more"
    )
