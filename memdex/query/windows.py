"""Conversation passages: the messages around the best-matching messages, not whole chunks.

At chunk granularity (and so in answers) a conversation's result is a window of messages:

- the best ``WINDOW_POOL`` chunks the cascade ranked are split into their messages (each
  chunk's ``messages`` meta, written by ``ingest.chat``), and every message holding a query
  word is scored on its own: BM25 with the whole index's idf, plus a share for how well its
  chunk and its conversation ranked, and, with meaning on, for how near in meaning its chunk
  is to the question (``ranking.unit_prior``);
- the words the best few messages hold besides the query's (``query.feedback``) count too:
  in a message holding a query word at most as much again as its own words, so they reorder
  what the query found; in a chunk found by its title or by meaning they pick out the
  messages to hand out;
- the best messages, in order, each bring ``WINDOW_BEFORE`` messages before and
  ``WINDOW_AFTER`` after (across a chunk's edge too) until the token budget or the limit is
  reached; windows that overlap or touch are merged, and the budget pays only for new text;
- a matching message is shown whole; a message around it is shown whole when it is short
  for its speaker (``ranking.context_tokens``), else cut to its words nearest the match,
  and listed in the window's ``cut``: it is context, not evidence;
- each window keeps its speakers (the ``User:`` labels in its text) and each message's time.

A chunk of the pool none of whose messages holds a query word or a related word (found by
its title or by meaning) is handed out whole, as one window. A chunk without message offsets
(a note, a condensed archive's chunk file, an index built before they existed) competes as
one unit, scored the same way, and is handed out as the chunk it is.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from memdex.models import est_tokens
from memdex.query import feedback, ranking
from memdex.query.explain import Explainer
from memdex.query.feedback import Related
from memdex.query.results import Candidate
from memdex.store import db

WHOLE, HEAD, TAIL = "whole", "head", "tail"  # a message shown whole, its start, its end


@dataclass
class Turn:
    "One message of a conversation as a chunk holds it (a long message may be one piece of it)."

    index: int  # the message's place in its conversation, 0-based (as msg_start)
    role: str
    time: str | None
    text: str  # with its speaker label: "User: ..."
    chunk_id: int
    seq: int
    tokens: list[str] = field(default_factory=list, repr=False)

    @property
    def est_tokens(self) -> int:
        return est_tokens(len(self.text.encode("utf-8")))

    @property
    def said(self) -> str:
        "The message without its speaker's label (a long message's later piece has none)."
        label = f"{self.role.title()}: "  # as ingest.chat writes it (ROLE_LABELS)
        return self.text[len(label) :] if self.text.startswith(label) else self.text


@dataclass
class Window:
    "A run of a conversation's messages handed out as one passage."

    chunk_id: int  # the chunk of its best message
    turns: list[Turn]
    shown: list[str]  # for each turn: WHOLE, HEAD or TAIL
    score: float
    matched: list[int]  # indexes of the messages it was cut around
    scores: dict[int, float] = field(default_factory=dict)  # each of those messages' own score

    @property
    def text(self) -> str:
        return "\n\n".join(_show(t, how) for t, how in zip(self.turns, self.shown, strict=True))

    @property
    def size_bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    @property
    def est_tokens(self) -> int:
        return est_tokens(self.size_bytes)

    @property
    def msg_start(self) -> int:
        return self.turns[0].index

    @property
    def msg_end(self) -> int:
        return self.turns[-1].index

    @property
    def cut(self) -> list[int]:
        "Messages shown only in part: context, not evidence."
        return list(
            dict.fromkeys(t.index for t, how in zip(self.turns, self.shown, strict=True) if how != WHOLE)
        )

    def meta(self) -> dict[str, Any]:
        "What a result or passage says about the window: its messages, speakers and times."
        out: dict[str, Any] = {
            "msg_start": self.msg_start,
            "msg_end": self.msg_end,
            "roles": list(dict.fromkeys(t.role for t in self.turns)),
        }
        if self.turns[0].time:
            out["time"] = self.turns[0].time
        seen: dict[int, Turn] = {}
        for t in self.turns:
            seen.setdefault(t.index, t)
        out["window"] = {
            "matched": self.matched,
            "cut": self.cut,
            "messages": [{"n": t.index, "role": t.role, "time": t.time} for t in seen.values()],
        }
        return out


@dataclass
class Pick:
    "One result of a chunk search: a window of a conversation, or a chunk handed out whole."

    candidate: Candidate
    chunk_id: int
    window: Window | None = None


@dataclass
class Picked:
    "What a chunk search hands out: its picks, best first, and how they were chosen."

    picks: list[Pick]
    truncated: bool  # the budget left some out
    related: list[str]  # the related words that counted too (query.feedback), heaviest first


@dataclass
class _Piece:
    "What one unit may be, before it is scored: a message of a conversation, or a chunk."

    candidate: Candidate
    chunk_id: int
    prior: float
    positions: list[int]  # the message's place in its conversation's turns; [] for a chunk
    text: str  # what was said, without the speaker's label
    tokens: list[str]
    weight: float  # how much its words count for its speaker (ranking.role_weight)
    words: float = 0.0  # its score by the query's words and then the related words


@dataclass
class _Unit:
    score: float
    candidate: Candidate
    chunk_id: int
    document_id: int
    positions: list[int]  # turns of its conversation it stands for; [] for a plain chunk


class _Conversation:
    "The loaded turns of one conversation and which of them are shown so far."

    def __init__(self, turns: list[Turn]) -> None:
        self.turns = turns
        self.shown: dict[int, str] = {}  # position -> WHOLE, HEAD or TAIL
        self.best: dict[int, _Unit] = {}  # position -> the unit that asked for it first

    def adjacent(self, p: int, q: int) -> bool:
        "Do positions p < q follow each other in the conversation (no unloaded chunk between)?"
        return q == p + 1 and self.turns[q].seq - self.turns[p].seq <= 1

    def wanted(self, unit: _Unit) -> dict[int, str]:
        "What showing this unit takes: its message whole and the context around it (a chunk: whole)."
        want: dict[int, str] = {p: WHOLE for p in unit.positions}
        if len(unit.positions) != 1:
            return want
        for p in unit.positions:
            lo = p
            while lo > 0 and p - lo < ranking.WINDOW_BEFORE and self.adjacent(lo - 1, lo):
                lo -= 1
                want.setdefault(lo, _context(self.turns[lo], TAIL))
            hi = p
            while hi + 1 < len(self.turns) and hi - p < ranking.WINDOW_AFTER and self.adjacent(hi, hi + 1):
                hi += 1
                want.setdefault(hi, _context(self.turns[hi], HEAD))
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

    def windows(self) -> list[tuple[Window, _Unit]]:
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


def pick(
    conn: sqlite3.Connection,
    ranked: list[Candidate],
    explainer: Explainer,
    budget: int | None,
    limit: int,
) -> Picked | None:
    """The results of a chunk search over these ranked chunk candidates, best first, within
    ``budget`` estimated tokens and ``limit`` results; None when none of the best chunks is a
    conversation's (then chunks are handed out as they rank)."""
    pool = ranked[: ranking.WINDOW_POOL]
    chunk_of = {id(c): next(iter(c.chunks)) for c in pool}
    rows = conn.execute(db.query("chunks_around"), {"ids": json.dumps(list(chunk_of.values()))}).fetchall()
    conversations = _conversations(rows, explainer)
    in_pool = {r["id"]: r for r in rows}
    if not any(in_pool[cid]["document_id"] in conversations for cid in chunk_of.values() if cid in in_pool):
        return None
    units, related = _units(conn, pool, chunk_of, in_pool, conversations, explainer)
    picks, truncated = _pack(units, conversations, in_pool, budget, limit)
    return Picked(picks, truncated, related.words if related else [])


def _conversations(rows: list[sqlite3.Row], explainer: Explainer) -> dict[int, _Conversation]:
    "document id -> its loaded turns, for the documents all of whose loaded chunks have offsets."
    by_doc: dict[int, list[sqlite3.Row]] = {}
    for r in rows:
        by_doc.setdefault(r["document_id"], []).append(r)
    out = {}
    for doc, chunks in by_doc.items():
        turns = _turns(chunks, explainer)
        if turns is not None:
            out[doc] = _Conversation(turns)
    return out


def _turns(chunks: list[sqlite3.Row], explainer: Explainer) -> list[Turn] | None:
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


def _units(
    conn: sqlite3.Connection,
    pool: list[Candidate],
    chunk_of: dict[int, int],
    rows: dict[int, sqlite3.Row],
    conversations: dict[int, _Conversation],
    explainer: Explainer,
) -> tuple[list[_Unit], Related | None]:
    """Every message of the pool's conversation chunks that holds a query word (or a related
    word, ``query.feedback``), and every other chunk, scored; and the related words."""
    pieces = _pieces(pool, chunk_of, rows, conversations, explainer)
    lengths = [len(piece.tokens) for piece in pieces]
    mean = sum(lengths) / len(lengths) if lengths else 1.0
    for piece in pieces:
        piece.words = explainer.message_score(piece.tokens, mean) * piece.weight
    # Related words come from conversations' messages and count only there: a note's chunk
    # ranks as it did before.
    said = [p for p in pieces if p.positions]
    best = sorted((p for p in said if p.words > 0), key=lambda p: -(p.words + p.prior))
    related = feedback.related(conn, [(p.text, p.words + p.prior) for p in best], explainer)
    if related is not None:
        # In a chunk the query's words reached, the messages holding them are the evidence and
        # related words only reorder them: they add at most what the message's own words earn.
        # A chunk the words did not reach (found by its title or by meaning) gives the messages
        # that hold related words instead of itself whole.
        reached = {id(p.candidate) for p in said if p.words > 0}
        for piece in said:
            if piece.words > 0:
                piece.words += min(related.score(piece.text, mean) * piece.weight, piece.words)
            elif id(piece.candidate) not in reached:
                piece.words = related.score(piece.text, mean) * piece.weight
    by_chunk: dict[int, list[_Piece]] = {}
    for piece in pieces:
        by_chunk.setdefault(id(piece.candidate), []).append(piece)
    units: list[_Unit] = []
    for own in by_chunk.values():
        c, first = own[0].candidate, own[0]
        if not first.positions:  # a chunk that is not a conversation's: one unit
            units.append(_Unit(first.words + first.prior, c, first.chunk_id, c.document_id, []))
            continue
        matching = [p for p in own if p.words > 0]
        if not matching:  # found by its title or by meaning: the chunk as it is
            units.append(_Unit(first.prior, c, first.chunk_id, c.document_id, [p.positions[0] for p in own]))
        units += [_Unit(p.words + p.prior, c, p.chunk_id, c.document_id, p.positions) for p in matching]
    units.sort(key=lambda u: -u.score)
    return units, related


def _pieces(
    pool: list[Candidate],
    chunk_of: dict[int, int],
    rows: dict[int, sqlite3.Row],
    conversations: dict[int, _Conversation],
    explainer: Explainer,
) -> list[_Piece]:
    """Each message of the pool's conversation chunks and each other chunk, in pool order, with
    what its chunk and conversation add to its score (``ranking.unit_prior``)."""
    top = max((c.score for c in pool), default=0.0)

    def share(score: float) -> float:
        return max(0.0, min(score / top, 1.0)) if top > 0 else 0.0

    nearest = max((c.similarity for c in pool if c.similarity is not None), default=0.0)
    near = {id(c): ranking.nearness(c.similarity, nearest) for c in pool}
    best_of_doc: dict[int, float] = {}
    for c in pool:
        conversation_share = max(share(c.score), ranking.CONVERSATION_NEARNESS * near[id(c)])
        best_of_doc[c.document_id] = max(best_of_doc.get(c.document_id, 0.0), conversation_share)
    pieces: list[_Piece] = []
    for c in pool:
        cid = chunk_of[id(c)]
        if cid not in rows:
            continue
        prior = ranking.unit_prior(share(c.score), best_of_doc[c.document_id], near[id(c)])
        conv = conversations.get(c.document_id)
        if conv is None:
            text = f"{rows[cid]['heading'] or ''}\n{rows[cid]['text']}"
            pieces.append(_Piece(c, cid, prior, [], text, explainer.tokens(text), 1.0))
            continue
        for p, t in enumerate(conv.turns):
            if t.chunk_id == cid:
                pieces.append(_Piece(c, cid, prior, [p], t.said, t.tokens, ranking.role_weight(t.role)))
    return pieces


def _pack(
    units: list[_Unit],
    conversations: dict[int, _Conversation],
    rows: dict[int, sqlite3.Row],
    budget: int | None,
    limit: int,
) -> tuple[list[Pick], bool]:
    "The best units in order, each with its context, while the budget and the limit allow."
    spent, truncated = 0, False
    plain: list[_Unit] = []
    counts = {doc: 0 for doc in conversations}
    for unit in units:
        conv = conversations.get(unit.document_id)
        if conv is None:
            cost, more = rows[unit.chunk_id]["est_tokens"], 1
            if any(u.chunk_id == unit.chunk_id for u in plain):
                continue
        else:
            shown = conv.with_(conv.wanted(unit))
            if shown == conv.shown:
                continue
            cost = conv.tokens(shown) - conv.tokens(conv.shown)
            more = len(conv.runs(shown)) - counts[unit.document_id]
        if budget is not None and spent + cost > budget:
            truncated = True
            continue
        if sum(counts.values()) + len(plain) + more > limit:
            continue
        spent += cost
        if conv is None:
            plain.append(unit)
            continue
        conv.shown = shown
        for p in unit.positions:
            conv.best.setdefault(p, unit)
        counts[unit.document_id] = len(conv.runs(shown))
    picks = [(u.score, Pick(u.candidate, u.chunk_id)) for u in plain]
    for conv in conversations.values():
        for window, unit in conv.windows():
            picks.append((window.score, Pick(unit.candidate, window.chunk_id, window)))
    picks.sort(key=lambda sp: -sp[0])
    return [p for _, p in picks], truncated


def _context(turn: Turn, part: str) -> str:
    "How a message around a match is shown: whole if short for its speaker, else its near part."
    return WHOLE if turn.est_tokens <= ranking.context_tokens(turn.role) else part


def _show(turn: Turn, how: str) -> str:
    "A message as a window shows it: whole, or cut at a word to its speaker's context size."
    if how == WHOLE:
        return turn.text
    limit = ranking.context_tokens(turn.role) * 4
    label, sep, body = turn.text.partition(": ")
    if not sep:
        label, body = "", turn.text
    words = body.split()
    kept: list[str] = []
    size = 0
    for w in words if how == HEAD else reversed(words):
        size += len(w.encode("utf-8")) + 1
        if size > limit and kept:
            break
        kept.append(w)
    shown = " ".join(kept) + " …" if how == HEAD else "… " + " ".join(reversed(kept))
    return f"{label}: {shown}" if label else shown


def seeds(window: Window) -> list[Window]:
    """The window cut back to each message it was cut around, with that message's context:
    what an answer re-packs under its own budget (``answer.passages``)."""
    if not window.matched:
        return [window]
    out = []
    for m in window.matched:
        at = [p for p, t in enumerate(window.turns) if t.index == m]
        lo = max(0, at[0] - ranking.WINDOW_BEFORE)
        hi = min(len(window.turns) - 1, at[-1] + ranking.WINDOW_AFTER)
        turns = window.turns[lo : hi + 1]
        shown = [
            WHOLE if t.index == m else _context(t, TAIL if p < at[0] else HEAD)
            for p, t in enumerate(turns, lo)
        ]
        score = window.scores.get(m, window.score)
        out.append(Window(window.chunk_id, turns, shown, score, [m], {m: score}))
    return out


def merge(windows: list[Window]) -> list[Window]:
    "Windows of one conversation, merged where they overlap or touch; a message shown whole wins."
    shown: dict[tuple[int, int], tuple[Turn, str]] = {}
    owner: dict[tuple[int, int], Window] = {}
    for w in sorted(windows, key=lambda w: -w.score):  # a message between two: as the better shows it
        for t, how in zip(w.turns, w.shown, strict=True):
            key = (t.seq, t.index)
            if key not in shown or how == WHOLE:
                shown[key] = (t, how)
            owner.setdefault(key, w)
    out: list[Window] = []
    for key in sorted(shown):
        t, how = shown[key]
        last = out[-1].turns[-1] if out else None
        if last is not None and t.index - last.index <= 1 and t.seq - last.seq <= 1:
            out[-1].turns.append(t)
            out[-1].shown.append(how)
            continue
        first = owner[key]
        out.append(Window(first.chunk_id, [t], [how], first.score, []))
    for w in out:
        parts = {id(owner[(t.seq, t.index)]): owner[(t.seq, t.index)] for t in w.turns}.values()
        w.score = max(p.score for p in parts)
        w.scores = {m: sc for p in parts for m, sc in p.scores.items() if w.msg_start <= m <= w.msg_end}
        w.matched = sorted({m for p in parts for m in p.matched if w.msg_start <= m <= w.msg_end})
    return out
