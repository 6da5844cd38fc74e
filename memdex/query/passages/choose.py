"""Choosing a chunk search's passages: the best units in order, within the budget and the limit.

The best unit goes first; the others follow by their score for the budget they take, so that
what the person said in several conversations comes before another speaker's long reply that
repeats the question's words (``ranking.packing_score``). Each unit brings what showing it
takes (its message whole, the context around it; a chunk whole); the budget pays only for
text not shown yet, so windows of one conversation that overlap or touch merge into one
result. A unit that would pass the budget
is passed over for the next, smaller ones; one that would make more results than the limit is
passed over too, but a unit that only widens a window already chosen still goes in.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass

from memdex.models import Candidate
from memdex.query import ranking
from memdex.query.explain import Explainer
from memdex.query.passages import conversation, evidence
from memdex.query.passages.conversation import ConversationView, Unit
from memdex.query.passages.window import WHOLE, Window
from memdex.store import db


@dataclass
class Pick:
    "One result of a chunk search: a window of a conversation, or a chunk handed out whole."

    candidate: Candidate
    chunk_id: int
    window: Window | None = None
    score: float = 0.0  # the score of the best unit it shows: results are in this order


@dataclass
class LeftOut:
    "A document the budget left passages of out: the messages not shown (none for a note's chunk)."

    document_id: int
    messages: list[int]
    tokens: int  # what showing them would have taken, about


@dataclass
class Picked:
    "What a chunk search hands out: its picks, best first, and how they were chosen."

    picks: list[Pick]
    truncated: bool  # the budget left some out
    related: list[str]  # the related words that counted too (passages.feedback), heaviest first
    left_out: list[LeftOut]  # best first, what the budget passed over


def choose(
    conn: sqlite3.Connection,
    ranked: list[Candidate],
    explainer: Explainer,
    budget: int | None,
    limit: int,
    about_asker: bool = False,
) -> Picked | None:
    """The results of a chunk search over these ranked chunk candidates, best first, within
    ``budget`` estimated tokens and ``limit`` results; None when none of the best chunks is a
    conversation's (then chunks are handed out as they rank). ``about_asker``: the question is
    about whoever asks it, whose own messages pack first (``ranking.PERSON_WEIGHT``)."""
    pool = ranked[: ranking.WINDOW_POOL]
    chunk_of = {id(c): next(iter(c.chunks)) for c in pool}
    rows = conn.execute(db.query("chunks_around"), {"ids": json.dumps(list(chunk_of.values()))}).fetchall()
    conversations = conversation.load(rows, explainer)
    in_pool = {r["id"]: r for r in rows}
    if not any(in_pool[cid]["document_id"] in conversations for cid in chunk_of.values() if cid in in_pool):
        return None
    units, related = evidence.units(conn, pool, chunk_of, in_pool, conversations, explainer)
    order = _packing_order(units, conversations, about_asker)
    picks, left = _pack(order, conversations, in_pool, budget, limit)
    return Picked(picks, bool(left), related.words if related else [], _left_out(left, conversations))


def _packing_order(
    units: list[Unit], conversations: dict[int, ConversationView], about_asker: bool
) -> list[Unit]:
    """The best unit first, then the others by their score for the budget they take: another
    speaker's long message after what the person said, and the person's first when the
    question is about them (``ranking.packing_score``); units of documents found by their date
    alone last."""

    def key(unit: Unit) -> float:
        conv = conversations.get(unit.document_id)
        if conv is None or not unit.positions:
            return unit.score
        turns = [conv.turns[p] for p in unit.positions]
        role = "user" if any(t.role in ranking.PERSON_ROLES for t in turns) else turns[0].role
        # weighed as the asker's only when every message of it is theirs (not a chunk as it is)
        theirs = about_asker and all(t.role in ranking.PERSON_ROLES for t in turns)
        return ranking.packing_score(unit.score, role, sum(t.est_tokens for t in turns), theirs)

    # What only its date found (Cascade.fill_dated) comes after every unit a word found.
    return units[:1] + sorted(units[1:], key=lambda u: (u.candidate.stage == ranking.DATED_STAGE, -key(u)))


def _pack(
    units: list[Unit],
    conversations: dict[int, ConversationView],
    rows: dict[int, sqlite3.Row],
    budget: int | None,
    limit: int,
) -> tuple[list[Pick], list[tuple[Unit, int]]]:
    """The best units in order, each with its context, while the budget and the limit allow;
    and the units the budget passed over, with what each would have cost."""
    spent = 0
    left: list[tuple[Unit, int]] = []
    plain: list[Unit] = []
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
            left.append((unit, cost))
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
    picks = [Pick(u.candidate, u.chunk_id, score=u.score) for u in plain]
    for conv in conversations.values():
        for window, unit in conv.windows():
            picks.append(Pick(unit.candidate, window.chunk_id, window, window.score))
    picks.sort(key=lambda p: -p.score)
    return picks, left


def _left_out(left: list[tuple[Unit, int]], conversations: dict[int, ConversationView]) -> list[LeftOut]:
    """What the budget passed over, by document, best first: the messages still not shown, and
    what showing them beside what is shown would take."""
    wanted: dict[int, dict[int, str]] = {}
    out: dict[int, LeftOut] = {}
    for unit, cost in left:
        conv = conversations.get(unit.document_id)
        if conv is None:
            out.setdefault(unit.document_id, LeftOut(unit.document_id, [], 0)).tokens += cost
            continue
        if all(conv.shown.get(p) == WHOLE for p in unit.positions):
            continue  # a later, cheaper unit showed it after all
        entry = out.setdefault(unit.document_id, LeftOut(unit.document_id, [], 0))
        entry.messages = sorted({*entry.messages, *(conv.turns[p].index for p in unit.positions)})
        want = wanted.setdefault(unit.document_id, {})
        for p, how in conv.wanted(unit).items():
            want[p] = WHOLE if WHOLE in (how, want.get(p)) else want.get(p, how)
    for doc, want in wanted.items():
        conv = conversations[doc]
        out[doc].tokens = conv.tokens(conv.with_(want)) - conv.tokens(conv.shown)
    return list(out.values())
