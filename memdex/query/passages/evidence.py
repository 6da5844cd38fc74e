"""How likely each message (or chunk) of the ranked chunks is to hold the answer: its score.

A message of a conversation is scored on its own, as the cascade scores chunks:

- its words: BM25 of the query's words in the message, with the whole index's idf, length
  against the pool's mean message (``ranking.bm25_term``); then the related words of the best
  few messages (``passages.feedback``), at most as much again as the message's own words;
- its neighbours' words: a share of the better of the messages before and after it
  (``ranking.NEIGHBOUR_WEIGHT``). An answer often holds none of the question's words while
  the message it answers does ("What's your favourite game?" -- "I'm playing Xenoblade");
- where it stands: how high the cascade placed its chunk and its conversation's best chunk
  (``ranking.unit_prior``: by place, not by score: the cascade's stages have scores that do
  not compare), and with meaning on how near in meaning its chunk is.

A message holding none of the query's words, no related word and no neighbour that does is
not a unit; a chunk none of whose messages is goes out as it is (found by its title or by
meaning). A chunk that is no conversation's (a note) is one unit, scored the same way.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from memdex.models import Candidate
from memdex.query import ranking
from memdex.query.explain import Explainer
from memdex.query.passages import feedback
from memdex.query.passages.conversation import ConversationView, Unit
from memdex.query.passages.feedback import Related


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
    role: str = ""  # its speaker's ("user", "assistant", ...); "" for a chunk
    words: float = 0.0  # its score by the query's words and then the related words
    near: float = 0.0  # what its neighbours' words add


def units(
    conn: sqlite3.Connection,
    pool: list[Candidate],
    chunk_of: dict[int, int],
    rows: dict[int, sqlite3.Row],
    conversations: dict[int, ConversationView],
    explainer: Explainer,
) -> tuple[list[Unit], Related | None]:
    """The units of the pool's chunks, best first, and the related words that counted."""
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
    _neighbours(said, conversations)
    by_chunk: dict[int, list[_Piece]] = {}
    for piece in pieces:
        by_chunk.setdefault(id(piece.candidate), []).append(piece)
    out: list[Unit] = []
    for own in by_chunk.values():
        c, first = own[0].candidate, own[0]
        if not first.positions:  # a chunk that is not a conversation's: one unit
            out.append(Unit(first.words + first.prior, c, first.chunk_id, c.document_id))
            continue
        chosen = [p for p in own if p.words > 0 or p.near > 0]
        if not chosen and c.stage == ranking.DATED_STAGE:
            # found by its date alone: what the person said then, each with its context
            chosen = [p for p in own if p.role in ranking.PERSON_ROLES]
        if not chosen:  # found by its title or by meaning: the chunk as it is
            out.append(Unit(first.prior, c, first.chunk_id, c.document_id, [p.positions[0] for p in own]))
        out += [
            Unit(p.words + p.near + p.prior, c, p.chunk_id, c.document_id, p.positions, p.words > 0)
            for p in chosen
        ]
    out.sort(key=lambda u: -u.score)
    return out, related


def _neighbours(said: list[_Piece], conversations: dict[int, ConversationView]) -> None:
    "What each message's neighbours add: NEIGHBOUR_WEIGHT x the better one's words."
    words = {(p.candidate.document_id, p.positions[0]): p.words for p in said}
    for piece in said:
        doc, at = piece.candidate.document_id, piece.positions[0]
        around = [words.get((doc, q), 0.0) for q in conversations[doc].neighbours(at)]
        piece.near = ranking.NEIGHBOUR_WEIGHT * max(around, default=0.0)


def _pieces(
    pool: list[Candidate],
    chunk_of: dict[int, int],
    rows: dict[int, sqlite3.Row],
    conversations: dict[int, ConversationView],
    explainer: Explainer,
) -> list[_Piece]:
    """Each message of the pool's conversation chunks and each other chunk, in pool order, with
    what its chunk and conversation add to its score (``ranking.unit_prior``)."""
    nearest = max((c.similarity for c in pool if c.similarity is not None), default=0.0)
    near = {id(c): ranking.nearness(c.similarity, nearest) for c in pool}
    place = {id(c): ranking.place_share(k) for k, c in enumerate(pool)}
    best_of_doc: dict[int, float] = {}
    for c in pool:
        conversation_share = max(place[id(c)], ranking.CONVERSATION_NEARNESS * near[id(c)])
        best_of_doc[c.document_id] = max(best_of_doc.get(c.document_id, 0.0), conversation_share)
    pieces: list[_Piece] = []
    for c in pool:
        cid = chunk_of[id(c)]
        if cid not in rows:
            continue
        prior = ranking.unit_prior(place[id(c)], best_of_doc[c.document_id], near[id(c)])
        conv = conversations.get(c.document_id)
        if conv is None:
            text = f"{rows[cid]['heading'] or ''}\n{rows[cid]['text']}"
            pieces.append(_Piece(c, cid, prior, [], text, explainer.tokens(text), 1.0))
            continue
        for p, t in enumerate(conv.turns):
            if t.chunk_id == cid:
                pieces.append(
                    _Piece(c, cid, prior, [p], t.said, t.tokens, ranking.role_weight(t.role), t.role)
                )
    return pieces
