"""Ranked candidates -> results: sizes, line ranges, matching chunks, snippet, why, relevance.

Three queries, whatever the corpus size: the shown documents, their chunks, and the
document frequencies of the query's stems. The rest is ``explain`` over that text.
"""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from memdex.models import Candidate, Hit
from memdex.query import ranking
from memdex.query.explain import Explainer
from memdex.query.terms import Term, any_of
from memdex.store import db
from memdex.utils import Budget

if TYPE_CHECKING:
    from memdex.query.passages.choose import LeftOut
    from memdex.query.passages.window import Window


MAX_MATCHING_CHUNKS = 50


# The chunks that can explain a result are matched within the shown documents' own ranges of
# chunk ids (hit_chunks_in_ranges.sql) when the query's words have more than this many
# postings per document and word shown; else across the index (hit_chunks_matching.sql), which
# reads every posting once. The same rows either way; only the cost differs (issue 16). A range
# costs a seek per word and document: at 100,000 notes 1.4 ms a search against 18 across the
# index; Serena and SciFact questions stay across the index, where ranges would cost more
# (Serena 1.1 -> 1.8 ms, SciFact at 100 results 0.7 -> 4.2). From 100 to 200 the choice is the
# best on all four sets.
RANGE_POSTINGS = 200


def explainer_for(conn: sqlite3.Connection, terms: list[Term]) -> Explainer:
    "An Explainer whose word weights are the index's own idf for each stem."
    explainer = Explainer(terms)
    total, frequencies = ranking.index_frequencies(conn, explainer.all_stems())
    explainer.idf = ranking.idf_of(total, frequencies)
    explainer.postings = sum(frequencies.values())
    return explainer


class _Texts:
    "The shown documents and their chunks, tokenized once."

    def __init__(
        self,
        conn: sqlite3.Connection,
        doc_ids: list[int],
        explainer: Explainer,
        chunk_ids: Iterable[int] = (),
        whole: bool = False,
    ) -> None:
        """Read the documents, and of their chunks those that hold a query term, their first
        and ``chunk_ids`` -- or, ``whole``, all of them (the full text was asked for)."""
        self.explainer = explainer
        ids = json.dumps(doc_ids)
        self.docs = {r["id"]: r for r in conn.execute(db.query("hit_documents"), {"ids": ids})}
        self.chunks: dict[int, list[sqlite3.Row]] = {}
        self.by_id: dict[int, sqlite3.Row] = {}
        match = any_of([[t, *t.synonyms] for t in explainer.terms])
        if whole or not match or any("*" in t.text for t in explainer.terms):
            rows = conn.execute(db.query("hit_chunks"), {"ids": ids})
        else:
            params = {"ids": ids, "chunk_ids": json.dumps(list(chunk_ids)), "match": match}
            words = sum(1 + len(t.synonyms) for t in explainer.terms)
            ranges = explainer.postings > RANGE_POSTINGS * len(doc_ids) * words
            rows = conn.execute(db.query("hit_chunks_in_ranges" if ranges else "hit_chunks_matching"), params)
        for c in rows:
            self.chunks.setdefault(c["document_id"], []).append(c)
            self.by_id[c["id"]] = c
        self._tokens: dict[int, list[str]] = {}
        self._text_tokens: dict[int, list[str]] = {}

    def tokens(self, chunk: sqlite3.Row) -> list[str]:
        "The chunk's heading and text tokens."
        if chunk["id"] not in self._tokens:
            text = self.text_tokens(chunk)
            self._tokens[chunk["id"]] = self.explainer.tokens(chunk["heading"]) + text
        return self._tokens[chunk["id"]]

    def text_tokens(self, chunk: sqlite3.Row) -> list[str]:
        "The tokens of the chunk's text alone, which its snippet reuses."
        if chunk["id"] not in self._text_tokens:
            self._text_tokens[chunk["id"]] = self.explainer.tokens(chunk["text"])
        return self._text_tokens[chunk["id"]]

    def topic_tokens(self, doc: sqlite3.Row) -> list[str]:
        return self.explainer.tokens(doc["title"], doc["description"], doc["tags"], doc["topics"])

    def ranked_chunks(self, doc_id: int) -> list[tuple[float, sqlite3.Row]]:
        "The document's chunks that contain a query term, best first."
        scored = [(self.explainer.chunk_score(self.tokens(c)), c) for c in self.chunks.get(doc_id, [])]
        return sorted((sc for sc in scored if sc[0] > 0), key=lambda sc: -sc[0])


def best_chunks(conn: sqlite3.Connection, doc_ids: list[int], terms: list[Term]) -> dict[int, int]:
    "Each document's best chunk for these terms, or its first chunk when none holds a term."
    texts = _Texts(conn, doc_ids, explainer_for(conn, terms))
    out = {}
    for doc_id, own in texts.chunks.items():
        ranked = texts.ranked_chunks(doc_id)
        out[doc_id] = ranked[0][1]["id"] if ranked else own[0]["id"]
    return out


def build_hits(
    conn: sqlite3.Connection,
    ranked: list[Candidate],
    terms: list[Term],
    granularity: str,
    max_tokens: int | None,
    full_text: bool,
    windows: list[Window | None] | None = None,
    scores: list[float] | None = None,
) -> tuple[list[Hit], bool]:
    """Hits for the ranked candidates, in order, until the token budget would be passed; at
    chunk granularity ``windows`` (one per candidate, or None) are the conversation passages
    handed out in place of the candidates' chunks (``memdex.query.passages``). ``scores`` are the
    scores the hits show, one per candidate (``ranking.shown_scores``); else their own."""
    if not ranked:
        return [], False
    explainer = explainer_for(conn, terms)
    doc_ids = list(dict.fromkeys(c.document_id for c in ranked))
    texts = _Texts(conn, doc_ids, explainer, (i for c in ranked for i in c.chunks), whole=full_text)
    hits: list[Hit] = []
    budget = Budget(max_tokens)
    top_score = {c.stage: c.score for c in reversed(ranked)}  # best score of each stage
    for n, cand in enumerate(ranked):
        window = windows[n] if windows else None
        doc = texts.docs[cand.document_id]
        own = texts.chunks.get(cand.document_id, [])
        matching = texts.ranked_chunks(cand.document_id)
        best: sqlite3.Row | None
        only_meaning = cand.layer == ranking.MEANING_LAYER
        if granularity == "chunk":
            best = texts.by_id[window.chunk_id if window else next(iter(cand.chunks))]
            scope = [best]
            size, tokens = best["size_bytes"], best["est_tokens"]
            if window is not None:
                size, tokens = window.size_bytes, window.est_tokens
        else:
            if only_meaning:  # its passage is the one nearest the query
                best = texts.by_id.get(next(iter(cand.chunks)))
            else:
                best = matching[0][1] if matching else (own[0] if own else None)
            scope = own
            size, tokens = doc["size_bytes"], doc["est_tokens"]
        if not budget.take(tokens):
            return hits, True
        shown = [explainer.tokens(window.text)] if window else [texts.tokens(c) for c in scope]
        why, coverage = explainer.explain(cand.layer, cand.stage, texts.topic_tokens(doc), shown)
        strength = cand.score / top_score[cand.stage] if top_score.get(cand.stage) else 1.0
        relevance = ranking.relevance(cand.layer, coverage, strength)
        if cand.similarity is not None:
            passage = (best["heading"] or doc["title"]) if best is not None else doc["title"]
            explainer.near(why, cand.similarity, passage, only_meaning)
            if only_meaning:
                relevance = ranking.meaning_relevance(cand.similarity)
        hit = Hit(
            id=doc["id"],
            key=doc["key"],
            path=doc["path"],
            title=doc["title"],
            kind=doc["kind"],
            namespace=doc["namespace"],
            type=doc["type"],
            tags=json.loads(doc["tags"]),
            date=doc["date"],
            date_source=doc["date_source"],
            score=round(scores[n] if scores else cand.score, 4),
            relevance=round(relevance, 3),
            match_layer=cand.layer,
            why_relevant=why,
            snippet=explainer.snippet(window.text) if window else _snippet(texts, best, doc),
            line_start=best["line_start"] if best is not None else None,
            line_end=best["line_end"] if best is not None else None,
            size_bytes=size,
            est_tokens=tokens,
            scope=doc["scope"],
            platform=doc["platform"],
        )
        hit.place = place(doc)
        hit.location = location(doc["path"], best, hit.place)
        hit.chunk_count = doc["chunk_count"]
        if best is not None and "file" in json.loads(best["meta"] or "{}"):
            hit.file_to_read = hit.location
        hit.chat = chat_facts(doc)
        if granularity == "chunk" and best is not None:
            hit.chunk_id, hit.heading = best["id"], best["heading"]
            hit.matching_chunks = [_chunk_info(best, explainer.chunk_score(texts.tokens(best)))]
        else:
            hit.matching_chunks = [_chunk_info(c, score) for score, c in matching[:MAX_MATCHING_CHUNKS]]
        if window is not None:
            hit.passage = window
            hit.location = f"{hit.place} (messages {window.msg_start + 1}-{window.msg_end + 1})"
            hit.matching_chunks[0].update(window.meta(), est_tokens=window.est_tokens)
        if full_text:
            hit.text = window.text if window else "\n\n".join(c["text"] for c in scope)
        hits.append(hit)
    return hits, False


CHAT_FACTS = (
    "message_count",
    "chunk_count",
    "has_decisions",
    "has_discoveries",
    "has_procedures",
    "has_artifacts",
)


def chat_facts(doc: sqlite3.Row) -> dict[str, Any] | None:
    "What a result says about a conversation: its size in messages and chunks, and its signals."
    meta = json.loads(doc["meta"] or "{}")
    if "message_count" not in meta:
        return None
    facts = {k: meta.get(k) for k in CHAT_FACTS[:2]}
    facts["signals"] = {k: bool(meta.get(k)) for k in CHAT_FACTS[2:]}
    if meta.get("model"):
        facts["model"] = meta["model"]
    return facts


def place(doc: sqlite3.Row) -> str:
    """A document as a location names it: its file's path, or ``path#key`` when the file holds
    other documents too (a chat export's conversations; ingest names a record the same way)."""
    if doc["file_documents"] > 1 and doc["key"]:
        return f"{doc['path']}#{doc['key']}"
    return str(doc["path"])


def location(path: str, chunk: sqlite3.Row | None, where: str | None = None) -> str:
    """Where to read a result: lines of a file, messages of a conversation, an archive's chunk
    file; ``where`` is the document's :func:`place` (default: ``path``)."""
    where = where or path
    if chunk is None:
        return where
    meta = json.loads(chunk["meta"] or "{}")
    if "file" in meta:
        return os.path.join(os.path.dirname(path), meta["file"])
    if "msg_start" in meta:
        return f"{where} (messages {meta['msg_start'] + 1}-{meta['msg_end'] + 1})"
    if chunk["line_start"]:
        return f"{where}:{chunk['line_start']}-{chunk['line_end']}"
    return where


def _snippet(texts: _Texts, chunk: sqlite3.Row | None, doc: sqlite3.Row) -> str:
    if chunk is None:
        return str(doc["description"])
    return texts.explainer.snippet(chunk["text"], texts.text_tokens(chunk))


def _chunk_info(c: sqlite3.Row, score: float) -> dict[str, Any]:
    info: dict[str, Any] = {
        "chunk_id": c["id"],
        "seq": c["seq"],
        "heading": c["heading"],
        "line_start": c["line_start"],
        "line_end": c["line_end"],
        "est_tokens": c["est_tokens"],
        "score": round(score, 3),
    }
    meta = json.loads(c["meta"] or "{}")
    meta.pop("messages", None)  # where a chat chunk's messages start: for cutting, not to show
    if meta:
        info.update(meta)
    return info


def left_out(conn: sqlite3.Connection, left: list[LeftOut]) -> list[dict[str, Any]]:
    """What a chunk search's budget passed over, best first, as a result says it: each
    document's id, title and key, the messages not shown (a conversation's) and about how many
    tokens showing them would take: what to ``memdex show`` or how far to raise the budget.
    Message numbers are 0-based, as a window's ``matched`` and ``msg_start``; the text says
    them 1-based, as a location does."""
    if not left:
        return []
    rows = {
        r["id"]: r
        for r in conn.execute(db.query("hit_documents"), {"ids": json.dumps([x.document_id for x in left])})
    }
    return [
        {
            "id": x.document_id,
            "title": rows[x.document_id]["title"],
            "key": rows[x.document_id]["key"],
            "messages": x.messages,
            "estimated_tokens": x.tokens,
        }
        for x in left
        if x.document_id in rows
    ]
