"""Why a result matched, which of its chunks matter, and a snippet -- for the results shown.

SQL has already ranked the results; this module reads the text of the few that are shown
(made into tokens exactly as the index holds them, see ``memdex.tokens``) and says which
query terms and synonyms each contains, in its topics and in its content. Its cost depends on
the results shown, never on the size of the corpus.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from memdex.query.ranking import (
    DATE_LAYER,
    LAYER_NAMES,
    MEANING_LAYER,
    SYNONYM_COVERAGE,
    SYNONYM_WEIGHT,
    bm25_term,
)
from memdex.query.terms import Term
from memdex.tokens import WORD, fold, has_cjk, prefixes_of, split_words, stem, tokens, tokens_among

# why_relevant's "match" for a layer that matched no word: meaning's, or a date's (the period a
# question names, Cascade.fill_dated); the word layers say "all" or "any".
_MATCH = {MEANING_LAYER: "meaning", DATE_LAYER: "date"}
SNIPPET_WORDS = 32
MARK_OPEN, MARK_CLOSE = "«", "»"  # not ** : memories are markdown and use it themselves


def phrase_stems(term: Term) -> tuple[str, ...]:
    return tuple(tokens(" ".join(term.tokens)))


def contains(tokens: list[str], phrase: tuple[str, ...]) -> bool:
    "Does the stemmed token list hold the phrase (its words adjacent, in order)?"
    if not phrase:
        return False
    if len(phrase) == 1:
        return phrase[0] in tokens
    first = phrase[0]
    n = len(phrase)
    return any(tokens[i : i + n] == list(phrase) for i, t in enumerate(tokens) if t == first)


@dataclass
class Explainer:
    "Explains results for one query's terms (each with its synonyms)."

    terms: list[Term]
    idf: dict[str, float] = field(default_factory=dict)  # stem -> inverse document frequency
    postings: int = 0  # chunks holding each stem, summed: what matching the words everywhere reads

    def __post_init__(self) -> None:
        self.phrases = {id(t): phrase_stems(t) for term in self.terms for t in [term, *term.synonyms]}
        self.marked = {s for p in self.phrases.values() for s in p}
        self.prefixes = {p for s in self.marked for p in prefixes_of(s)}
        # one CJK character asked alone matches the pairs it begins (tokens.phrase): read so here
        self.singles = {s for s in self.marked if len(s) == 1 and has_cjk(s)}

    def tokens(self, *texts: str) -> list[str]:
        "Tokens of some texts as the index holds them; words that cannot match are ''."
        found = [t for text in texts for t in tokens_among(text, self.prefixes)]
        if self.singles:
            found = [t[0] if t[:1] in self.singles and t not in self.marked else t for t in found]
        return found

    def all_stems(self) -> list[str]:
        return sorted(self.marked)

    def chunk_score(self, tokens: list[str]) -> float:
        """How well a chunk answers the query, to pick a document's best chunks.

        Each term present adds its idf (a synonym half); more occurrences add a little.
        """
        if not tokens:
            return 0.0
        score = sum(w * idf * (1.0 + math.log(count)) for w, count, idf in self._found(tokens, 1.0))
        return score / (1.0 + math.log(1 + len(tokens) / 200))

    def message_score(self, tokens: list[str], mean_length: float) -> float:
        """BM25 of one message (or passage) against the query, with the index's idf and
        ``mean_length`` the mean size of what it competes with (``ranking.bm25_term``); each
        term counts once, by its own word or else its best synonym (SYNONYM_WEIGHT)."""
        found = self._found(tokens, 0.0)
        return sum(w * bm25_term(idf, tf, len(tokens), mean_length) for w, tf, idf in found)

    def _found(self, tokens: list[str], unknown_idf: float) -> Iterator[tuple[float, int, float]]:
        """(weight, occurrences, idf) of each term ``tokens`` hold, by its own word or else its
        first synonym that is there (weight SYNONYM_WEIGHT); a stem the index never saw has
        ``unknown_idf``."""
        for term in self.terms:
            for weight, alt in [(1.0, term), *((SYNONYM_WEIGHT, s) for s in term.synonyms)]:
                phrase = self.phrases[id(alt)]
                if contains(tokens, phrase):
                    count = tokens.count(phrase[0]) if len(phrase) == 1 else 1
                    yield weight, count, sum(self.idf.get(s, unknown_idf) for s in phrase)
                    break

    def explain(
        self, layer: int, stage: int, topic_tokens: list[str], chunk_tokens: list[list[str]]
    ) -> tuple[dict[str, Any], float]:
        "why_relevant for one result, and the share of key terms it covers (synonyms count 0.8)."
        matched: list[dict[str, Any]] = []
        via: list[dict[str, Any]] = []
        missing: list[str] = []
        covered = 0.0
        for term in self.terms:
            where = self._where(term, topic_tokens, chunk_tokens)
            if where:
                matched.append({"term": term.text, "fields": where})
                covered += 1.0
                continue
            for syn in term.synonyms:
                where = self._where(syn, topic_tokens, chunk_tokens)
                if where:
                    via.append({"term": term.text, "synonym": syn.text, "fields": where})
                    covered += SYNONYM_COVERAGE
                    break
            else:
                missing.append(term.text)
        mode = "all terms" if stage <= 4 else "any term"
        if layer == MEANING_LAYER:
            mode = "near in meaning"
        elif layer == DATE_LAYER:
            mode = "dated in the period asked about"
        parts = [f"{m['term']} [{', '.join(m['fields'])}]" for m in matched]
        parts += [f"{v['synonym']} (synonym of {v['term']}) [{', '.join(v['fields'])}]" for v in via]
        unmatched = "none of the words" if layer in (MEANING_LAYER, DATE_LAYER) else "raw FTS5 query"
        found = "; ".join(parts) or unmatched
        summary = f"layer {layer} ({LAYER_NAMES[layer]}, {mode}): {found}"
        if missing:
            summary += f"; not found: {', '.join(missing)}"
        why = {
            "layer": layer,
            "layer_name": LAYER_NAMES[layer],
            "match": _MATCH.get(layer) or ("all" if stage <= 4 else "any"),
            "terms": matched,
            "synonyms": via,
            "missing": missing,
            "summary": summary,
        }
        return why, (covered / len(self.terms) if self.terms else 1.0)

    @staticmethod
    def near(why: dict[str, Any], similarity: float, passage: str, only_meaning: bool) -> None:
        "Add what the meaning pass saw to a result's why: its cosine and the passage it matched."
        why["similarity"] = round(similarity, 3)
        if only_meaning:
            why["passage"] = passage
            why["summary"] = (
                f"layer {MEANING_LAYER} (meaning): similarity {similarity:.2f} to \u201c{passage}\u201d; "
                + why["summary"].split(": ", 1)[1]
            )
        else:
            why["summary"] += f"; near in meaning ({similarity:.2f})"

    def _where(self, term: Term, topic_tokens: list[str], chunk_tokens: list[list[str]]) -> list[str]:
        phrase = self.phrases[id(term)]
        where = []
        if contains(topic_tokens, phrase):
            where.append("topics")
        if any(contains(tokens, phrase) for tokens in chunk_tokens):
            where.append("content")
        return where

    def snippet(self, text: str, tokens: list[str] | None = None) -> str:
        """About SNIPPET_WORDS words around the densest run of matches, the matches marked «so».

        ``tokens``: the text's own ``self.tokens(text)``, when they are made already. An ASCII
        text's tokens are its words in order (folding changes no word there), so its words
        need not be read and stemmed again."""
        marked: dict[int, str]  # word index -> a token of it the query has, for the matches
        if tokens is not None and text.isascii():
            count = len(tokens)
            marked = {i: t for i, t in enumerate(tokens) if t in self.marked}
        else:
            originals = split_words(text)
            count = len(originals)
            if text.isascii():  # lower case keeps every offset: the words split the same
                folded = split_words(text.lower())
            else:
                folded = [fold(w) for w in originals]
            marked = self._marked_words(folded)
        if not count:
            return ""
        hits = sorted(marked)
        start = 0
        if hits:
            # The first window of SNIPPET_WORDS words holding the most distinct matched stems,
            # slid over the matches (each enters and leaves the window once).
            best, best_count = hits[0], 0
            in_window: dict[str, int] = {}
            right = 0
            for left, i in enumerate(hits):
                while right < len(hits) and hits[right] < i + SNIPPET_WORDS:
                    key = marked[hits[right]]
                    in_window[key] = in_window.get(key, 0) + 1
                    right += 1
                if len(in_window) > best_count:
                    best, best_count = i, len(in_window)
                key = marked[hits[left]]
                in_window[key] -= 1
                if not in_window[key]:
                    del in_window[key]
            start = max(0, best - 4)
        end = min(count, start + SNIPPET_WORDS)
        window = list(islice(WORD.finditer(text), start, end))  # skipped in C, not word by word
        out = []
        cursor = window[0].start()
        for i, m in enumerate(window, start):
            out.append(text[cursor : m.start()])
            out.append(self.mark(m.group()) if i in marked else m.group())
            cursor = m.end()
        body = " ".join("".join(out).split())
        return ("…" if start > 0 else "") + body + ("…" if end < count else "")

    def mark(self, word: str) -> str:
        """A matched word, marked «so». In a word holding Chinese, Japanese or Korean (a run
        of them has no spaces: often a whole sentence), only the characters that matched."""
        if not has_cjk(word):
            return f"{MARK_OPEN}{word}{MARK_CLOSE}"
        chars = [fold(c) for c in word]
        wanted = self.marked
        spans: list[tuple[int, int]] = []
        i = 0
        while i < len(word):
            j = i
            while j < len(word) and has_cjk(chars[j]) == has_cjk(chars[i]):
                j += 1
            if not has_cjk(chars[i]):
                if any(t in wanted for t in tokens(word[i:j])):
                    spans.append((i, j))
            else:
                spans += [(k, k + 2) for k in range(i, j - 1) if chars[k] + chars[k + 1] in wanted]
                spans += [(k, k + 1) for k in range(i, j) if chars[k] in wanted]  # a query of one
            i = j
        if not spans:
            return f"{MARK_OPEN}{word}{MARK_CLOSE}"
        out: list[str] = []
        cursor = 0
        for start, end in sorted(spans):
            if start < cursor:  # overlapping pairs: one mark
                if end > cursor:
                    out[-1] = out[-1][: -len(MARK_CLOSE)] + word[cursor:end] + MARK_CLOSE
                    cursor = end
                continue
            out.append(word[cursor:start] + MARK_OPEN + word[start:end] + MARK_CLOSE)
            cursor = end
        return "".join(out) + word[cursor:]

    def _marked_words(self, folded: list[str]) -> dict[int, str]:
        """Which of the folded words (by index) have a token of the query, and that token (a
        word of CJK has several: its pairs of characters)."""
        marked, prefixes = self.marked, self.prefixes
        found = {}
        for i, w in enumerate(folded):
            if w.isascii() and w.isalnum():  # one token, its stem: as tokens_among makes it
                if w[:2] in prefixes or len(w) < 2:  # most words drop here, never stemmed
                    t = stem(w)
                    if t in marked:
                        found[i] = t
                continue
            for t in self.tokens(w):  # "" cannot match
                if t in marked:
                    found[i] = t
                    break
        return found
