"""A conversation's loaded messages, and which of them a search shows so far.

The messages come from the chunks a search looks at and the chunks on either side of them
(``chunks_around.sql``), split at the offsets ``ingest.chat`` stores in each chunk's
``messages`` meta. A chunk without offsets (a note, a condensed archive's chunk file, an
index built before they existed) makes its document no conversation here.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field

from memdex.models import Candidate
from memdex.query import ranking
from memdex.query.explain import Explainer
from memdex.query.passages.window import HEAD, TAIL, WHOLE, Turn, Window, context


@dataclass
class Unit:
    """What may be handed out, scored: a message of a conversation (its place among the loaded
    turns in ``positions``), a conversation's chunk as it is, or another document's chunk
    (``positions`` empty)."""

    score: float
    candidate: Candidate
    chunk_id: int
    document_id: int
    positions: list[int] = field(default_factory=list)
    # Does it hold the query's (or related) words? A message chosen only for its neighbour's
    # words is shown whole with no context of its own: that neighbour is its context.
    evidence: bool = True


class ConversationView:
    "The loaded turns of one conversation and which of them are shown so far."

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = turns
        self.shown: dict[int, str] = {}  # position -> WHOLE, HEAD or TAIL
        self.best: dict[int, Unit] = {}  # position -> the unit that asked for it first

    def adjacent(self, p: int, q: int) -> bool:
        "Do positions p < q follow each other in the conversation (no unloaded chunk between)?"
        return q == p + 1 and self.turns[q].seq - self.turns[p].seq <= 1

    def neighbours(self, p: int) -> list[int]:
        "The positions before and after ``p`` that follow it directly."
        out = [p - 1] if p > 0 and self.adjacent(p - 1, p) else []
        return out + ([p + 1] if p + 1 < len(self.turns) and self.adjacent(p, p + 1) else [])

    def wanted(self, unit: Unit) -> dict[int, str]:
        "What showing this unit takes: its message whole and the context around it (a chunk: whole)."
        want: dict[int, str] = {p: WHOLE for p in unit.positions}
        if len(unit.positions) != 1 or not unit.evidence:
            return want
        for p in unit.positions:
            lo = p
            while lo > 0 and p - lo < ranking.WINDOW_BEFORE and self.adjacent(lo - 1, lo):
                lo -= 1
                want.setdefault(lo, context(self.turns[lo], TAIL))
            hi = p
            while hi + 1 < len(self.turns) and hi - p < ranking.WINDOW_AFTER and self.adjacent(hi, hi + 1):
                hi += 1
                want.setdefault(hi, context(self.turns[hi], HEAD))
        return want

    def with_(self, want: dict[int, str]) -> dict[int, str]:
        shown = dict(self.shown)
        for p, how in want.items():
            if shown.get(p) != WHOLE:
                shown[p] = how if p not in shown or how == WHOLE else shown[p]
        return shown

    def runs(self, shown: dict[int, str]) -> list[list[int]]:
        out: list[list[int]] = []
        for p in sorted(shown):
            if out and self.adjacent(out[-1][-1], p):
                out[-1].append(p)
            else:
                out.append([p])
        return out

    def tokens(self, shown: dict[int, str]) -> int:
        return sum(self._window(run, shown).est_tokens for run in self.runs(shown))

    def windows(self) -> list[tuple[Window, Unit]]:
        "The windows shown, each with the best unit it was cut around."
        out = []
        for run in self.runs(self.shown):
            window = self._window(run, self.shown)
            out.append((window, max((self.best[p] for p in run if p in self.best), key=lambda u: u.score)))
        return out

    def _window(self, run: list[int], shown: dict[int, str]) -> Window:
        units = [self.best[p] for p in run if p in self.best]
        top = max(units, key=lambda u: u.score) if units else None
        scores: dict[int, float] = {}
        for u in units:
            if not u.evidence:
                continue
            for p in u.positions:
                index = self.turns[p].index
                scores[index] = max(scores.get(index, u.score), u.score)
        return Window(
            top.chunk_id if top else self.turns[run[0]].chunk_id,
            [self.turns[p] for p in run],
            [shown[p] for p in run],
            top.score if top else 0.0,
            sorted(scores),
            scores,
        )


def load(rows: list[sqlite3.Row], explainer: Explainer) -> dict[int, ConversationView]:
    "document id -> its loaded turns, for the documents all of whose loaded chunks have offsets."
    by_doc: dict[int, list[sqlite3.Row]] = {}
    for r in rows:
        by_doc.setdefault(r["document_id"], []).append(r)
    out = {}
    for doc, chunks in by_doc.items():
        turns = turns_of(chunks, explainer)
        if turns is not None:
            out[doc] = ConversationView(turns)
    return out


def turns_of(chunks: list[sqlite3.Row], explainer: Explainer) -> list[Turn] | None:
    "The messages of a document's chunks, in order; None when a chunk has no message offsets."
    turns: list[Turn] = []
    for c in chunks:
        offsets = json.loads(c["meta"] or "{}").get("messages")
        if not offsets:
            return None
        text = c["text"]
        for k, (index, offset, role, time) in enumerate(offsets):
            end = offsets[k + 1][1] - 2 if k + 1 < len(offsets) else len(text)
            piece = text[offset:end]
            turns.append(Turn(index, role, time, piece, c["id"], c["seq"], explainer.tokens(piece)))
    return turns
