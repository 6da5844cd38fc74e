"""The sources of an answer: the best passages of the best results, under a token budget.

Answers search chunks: the best chunks, in rank order, fill the budget, and the chunks of
one document make one numbered source -- the number its citations use. A conversation's
results are windows of messages (``memdex.query.passages``), chosen by the search under the
answer's own budget: each goes in whole, in rank order, merged with the windows of that
conversation it overlaps or touches, the budget paying only for new text; a window that no
longer fits (rounds of refinement bring more than one search's worth) is taken apart into
the messages it matched, each with its context, best first. Document results
(search mode's ``--retrieve``) give their matching chunks in turns instead: every
document's best chunk, then every document's second best. A result none of whose passages
fits is left out, and so cannot be cited.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass, field
from typing import Any

from memdex.models import Hit, est_tokens
from memdex.query.passages import Window, merge, seeds
from memdex.query.results import location
from memdex.store import db

DEFAULT_BUDGET = 6000  # estimated tokens of source text sent to the model
# Passages per source. Ranked chunks may all come from the one conversation a question is
# about: chat questions with their gold turns among the passages sent (2,000 tokens, dev
# split) 0.71 with 3, 0.76 with 5, 0.83 with 8 (scripts/eval_answers.py); Serena unchanged.
MAX_PASSAGES = 8
IN_TURNS = 3  # document hits: their best chunks, shared out in this many turns


@dataclass
class Passage:
    chunk_id: int
    seq: int
    heading: str
    text: str
    location: str
    line_start: int | None
    line_end: int | None
    est_tokens: int
    truncated: bool = False
    meta: dict[str, Any] = field(default_factory=dict)  # chats: msg_start, msg_end, roles

    def to_dict(self, full_text: bool = False) -> dict[str, Any]:
        out = {k: v for k, v in self.__dict__.items() if k not in ("text", "meta")}
        return {**out, **self.meta, **({"text": self.text} if full_text else {})}


@dataclass
class Source:
    n: int
    hit: Hit
    passages: list[Passage] = field(default_factory=list)
    cited: bool = False
    why_cited: str = ""
    supports: list[int] = field(default_factory=list)  # the details (1-based) that cite it

    @property
    def tokens(self) -> int:
        return sum(p.est_tokens for p in self.passages)

    @property
    def locations(self) -> list[str]:
        return list(dict.fromkeys(p.location for p in self.passages))

    def to_dict(self, full_text: bool = False) -> dict[str, Any]:
        h = self.hit
        return {
            "n": self.n,
            "chat_id": h.key,
            "id": h.id,
            "key": h.key,
            "title": h.title,
            "kind": h.kind,
            "platform": h.platform,
            "namespace": h.namespace,
            "date": h.date,
            "date_source": h.date_source,
            "tokens": self.tokens,
            "path": h.path,
            "locations": self.locations,
            "match_layer": h.match_layer,
            "why_relevant": h.why_relevant["summary"],
            "relevance_score": h.relevance,
            "cited": self.cited,
            "why_cited": self.why_cited,
            "supports": self.supports,
            "passages": [p.to_dict(full_text) for p in self.passages],
        }


def pack(
    conn: sqlite3.Connection,
    hits: list[Hit],
    budget: int,
    timeline: bool = False,
    max_sources: int | None = None,
) -> list[Source]:
    """Numbered sources with their passages, within ``budget`` estimated tokens.

    Chunk hits (``--granularity chunk``) are taken in rank order, grouped by document; the
    passages of document hits are their matching chunks, shared out in turns. Sources are
    in rank order, or oldest first for a timeline question (undated last).
    """
    if not hits:
        return []
    if all(h.chunk_id is not None for h in hits):
        ids = [h.chunk_id for h in hits]
        rows = conn.execute(db.query("chunks_by_id"), {"ids": json.dumps(ids)}).fetchall()
        order = _by_rank(hits, {r["id"]: r for r in rows})
    else:
        rows = conn.execute(db.query("hit_chunks"), {"ids": json.dumps([h.id for h in hits])}).fetchall()
        order = _in_turns(hits, {r["id"]: r for r in rows})
    chosen: dict[int, tuple[Hit, list[Passage]]] = {}
    windows: dict[int, list[Window]] = {}  # a conversation's windows sent so far
    left = budget
    for hit, chunk in order:
        if left <= 0:
            break
        if hit.id not in chosen and max_sources is not None and len(chosen) >= max_sources:
            continue
        if hit.passage is not None:  # a window of messages: whole if it fits, else its matches
            for part in [hit.passage, *seeds(hit.passage)]:
                old = windows.get(hit.id, [])
                new = merge([*old, part])
                cost = sum(w.est_tokens for w in new) - sum(w.est_tokens for w in old)
                if cost <= left:
                    windows[hit.id], left = new, left - cost
                    chosen.setdefault(hit.id, (hit, []))
                    if part is hit.passage:
                        break
            continue
        if hit.id in chosen and len(chosen[hit.id][1]) >= MAX_PASSAGES:
            continue
        passage = _passage(chunk, hit.path, hit.place)
        if passage.est_tokens > left:
            if chosen:  # only the very first passage is cut to fit; the others must fit whole
                continue
            passage = _cut(passage, left)
        chosen.setdefault(hit.id, (hit, []))[1].append(passage)
        left -= passage.est_tokens
    for doc, sent in windows.items():
        hit, passages = chosen[doc]
        passages += [_window_passage(w, hit) for w in sent]
    picked = list(chosen.values())
    if timeline:
        picked.sort(key=lambda hp: (hp[0].own_date is None, hp[0].own_date or ""))
    return [
        Source(n, hit, sorted(passages, key=lambda p: (p.seq, p.meta.get("msg_start", 0))))
        for n, (hit, passages) in enumerate(picked, 1)
    ]


def _by_rank(hits: list[Hit], by_id: dict[int, sqlite3.Row]) -> list[tuple[Hit, sqlite3.Row]]:
    return [(h, by_id[h.chunk_id]) for h in hits if h.chunk_id in by_id]


def _in_turns(hits: list[Hit], by_id: dict[int, sqlite3.Row]) -> list[tuple[Hit, sqlite3.Row]]:
    "Every document's best matching chunk, then every document's second best, and so on."
    first: dict[int, sqlite3.Row] = {}
    for r in by_id.values():
        if r["document_id"] not in first or r["seq"] < first[r["document_id"]]["seq"]:
            first[r["document_id"]] = r
    wanted = []
    for h in hits:
        chunks = [by_id[c["chunk_id"]] for c in h.matching_chunks if c["chunk_id"] in by_id]
        wanted.append(chunks or ([first[h.id]] if h.id in first else []))
    return [
        (h, chunks[turn])
        for turn in range(IN_TURNS)
        for h, chunks in zip(hits, wanted, strict=True)
        if turn < len(chunks)
    ]


def _passage(chunk: sqlite3.Row, path: str, where: str = "") -> Passage:
    return Passage(
        chunk_id=chunk["id"],
        seq=chunk["seq"],
        heading=chunk["heading"],
        text=chunk["text"],
        location=location(path, chunk, where),
        line_start=chunk["line_start"],
        line_end=chunk["line_end"],
        est_tokens=chunk["est_tokens"],
        meta=json.loads(chunk["meta"] or "{}"),
    )


def _window_passage(window: Window, hit: Hit) -> Passage:
    "A conversation's window of messages as a passage: its own text, messages and times."
    return Passage(
        chunk_id=window.chunk_id,
        seq=window.turns[0].seq,
        heading=hit.heading or hit.title,
        text=window.text,
        location=f"{hit.place or hit.path} (messages {window.msg_start + 1}-{window.msg_end + 1})",
        line_start=None,
        line_end=None,
        est_tokens=window.est_tokens,
        meta=window.meta(),
    )


def _cut(passage: Passage, tokens: int) -> Passage:
    "The passage cut to at most ``tokens`` estimated tokens, at a line or word boundary."
    marker = " …"
    data = passage.text.encode("utf-8")[: max(tokens * 4 - len(marker.encode()), 1)]
    text = data.decode("utf-8", "ignore")
    for sep in ("\n", " "):
        at = text.rfind(sep)
        if at > len(text) // 2:
            text = text[:at]
            break
    text += marker
    passage.text, passage.truncated = text, True
    passage.est_tokens = est_tokens(len(text.encode("utf-8")))
    return passage
