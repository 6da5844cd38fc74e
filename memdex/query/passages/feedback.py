"""Related words: what the best-matching messages say besides the query's own words.

A question and the message that answers it often share few words ("how are we treating the
clinics already paying" is answered by "existing customers keep their $49"), but the messages
that match the question best talk about the same thing as the answer. So, once the messages of
a chunk search are ranked by the query's words (``passages.evidence``), the words of the best
``ranking.FEEDBACK_MESSAGES`` are weighed: each word's share of a message, by how well that
message ranked, times the word's idf in the whole index. The ``ranking.FEEDBACK_TERMS`` that
weigh most count too, together as much as ``ranking.FEEDBACK_MASS`` query words, each by its
share of their weight. This is pseudo-relevance feedback (as RM3 does it), with words alone:
no model and no synonym table.
"""

from __future__ import annotations

import re
import sqlite3
from collections import Counter
from dataclasses import dataclass

from memdex.query import ranking
from memdex.query.explain import Explainer
from memdex.query.terms import Term
from memdex.tokens import STOPWORDS, fold, has_cjk, split_words, stem, word_tokens

_LOOKUPS = 5  # idf is looked up for this many times FEEDBACK_TERMS of the heaviest words

# Stop words, and what is left of a contraction once the apostrophe splits it ("hasn't").
# "don" and "won" are words too, so negations are taken out whole before the words are
# counted ("don't", "won't", "can't"), as are tags (<ide_opened_file>): issue 26 found "don"
# and "ide" among the related words.
_NOT_SAID = re.compile(r"\b\w+n['’]t\b|</?[A-Za-z][\w-]*>", re.IGNORECASE)
_STOP_STEMS = frozenset(
    stem(w)
    for w in [
        *STOPWORDS,
        *"aren couldn didn doesn hadn hasn haven isn mustn shouldn wasn weren wouldn".split(),
    ]
)


@dataclass
class Related:
    "The related words of one query: their stems, each with its weight as a share of a query word."

    weights: dict[str, float]  # stem -> weight; they add up to ranking.FEEDBACK_MASS
    idf: dict[str, float]
    reader: Explainer  # tokenizes a text for these stems only

    @property
    def words(self) -> list[str]:
        "The related words, as they were written, heaviest first."
        return [t.text for t in self.reader.terms]

    def score(self, text: str, mean_length: float) -> float:
        "BM25 of a text (a message, or a chunk) for the related words, each by its weight."
        tokens = self.reader.tokens(text)
        counts = Counter(tokens)
        return sum(
            weight * ranking.bm25_term(self.idf[s], counts[s], len(tokens), mean_length)
            for s, weight in self.weights.items()
            if counts[s]
        )


def related(conn: sqlite3.Connection, best: list[tuple[str, float]], explainer: Explainer) -> Related | None:
    """The words the best passages add to the query, or None when they add none.

    ``best``: (text, score) of the passages ranked by the query's words, best first, scores
    above 0; a message's text without its speaker's label. ``explainer``: the query's own."""
    weights: dict[str, float] = {}
    surface: dict[str, str] = {}  # stem -> a word it came from, so the term reads as a word
    top = best[0][1] if best else 0.0
    for text, score in best[: ranking.FEEDBACK_MESSAGES]:
        words = split_words(fold(_NOT_SAID.sub(" ", text)))
        # (token, the word shown for it): a CJK run shows each pair of characters it holds
        kept = [w for w in words if len(w) > 2 and not w.isdigit()]
        found = [(t, t if has_cjk(w) else w) for w in kept for t in word_tokens(w)]
        found = [(s, w) for s, w in found if s not in explainer.marked and s not in _STOP_STEMS]
        if not found or top <= 0:
            continue
        share = score / top / len(found)  # each occurrence: its share of the message, by rank
        for s, w in found:
            weights[s] = weights.get(s, 0.0) + share
            surface.setdefault(s, w)
    if not weights:
        return None
    # idf is looked up only for the words that weigh most without it: counting a word's
    # chunks reads its every posting, and long messages hold hundreds of words.
    heavy = sorted(weights, key=lambda s: (-weights[s], s))[: _LOOKUPS * ranking.FEEDBACK_TERMS]
    total, frequencies = ranking.index_frequencies(conn, heavy)
    idf = ranking.idf_of(total, frequencies)
    weighed = {s: weights[s] * idf[s] for s in heavy if s in idf}
    chosen = sorted(weighed, key=lambda s: (-weighed[s], s))[: ranking.FEEDBACK_TERMS]
    mass = sum(weighed[s] for s in chosen)
    if not chosen or mass <= 0:
        return None
    return Related(
        weights={s: ranking.FEEDBACK_MASS * weighed[s] / mass for s in chosen},
        idf={s: idf[s] for s in chosen},
        reader=Explainer([Term(text=surface[s], tokens=[surface[s]]) for s in chosen]),
    )
