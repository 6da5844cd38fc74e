"""Ranked candidates -> results: sizes, line ranges, snippets, why each matched, relevance.

Only the results that are shown are looked at here, so the cost does not grow with the corpus:
a handful of queries that ask, for each term and synonym, which of the shown documents and
chunks contain it.
"""

from __future__ import annotations

import json
import sqlite3
from typing import TYPE_CHECKING, Any

from . import db
from .layers import LAYER_NAMES, LAYER_WEIGHT
from .models import Hit
from .terms import Term, any_of

if TYPE_CHECKING:
    from .query import _Candidate, _Cascade

SNIPPET_OPEN, SNIPPET_CLOSE = "«", "»"  # not ** : memories are markdown and use it
MAX_MATCHING_CHUNKS = 50
SYNONYM_COVERAGE = 0.8  # a term found only through a synonym counts this much of a match


def build_hits(
    conn: sqlite3.Connection, run: _Cascade, max_tokens: int | None, full_text: bool
) -> tuple[list[Hit], bool]:
    ranked = run.ranked()[: run.limit]
    if not ranked:
        return [], False
    doc_ids = list(dict.fromkeys(c.document_id for c in ranked))
    docs = {r["id"]: r for r in conn.execute(db.query("hit_documents"), {"ids": json.dumps(doc_ids)})}
    chunks: dict[int, list[sqlite3.Row]] = {}
    chunk_by_id: dict[int, sqlite3.Row] = {}
    for c in conn.execute(db.query("hit_chunks"), {"ids": json.dumps(doc_ids)}):
        chunks.setdefault(c["document_id"], []).append(c)
        chunk_by_id[c["id"]] = c

    alternatives = [[t, *t.synonyms] for t in run.terms]
    any_match = any_of(alternatives) if run.terms else ""
    chunk_scores = _scores(conn, any_match, list(chunk_by_id)) if any_match else {}
    presence = _Presence(conn, run.terms, doc_ids, list(chunk_by_id))

    hits: list[Hit] = []
    total = 0
    truncated = False
    top_score = {c.tier: c.score for c in reversed(ranked)}  # best score of each tier
    for cand in ranked:
        doc = docs[cand.document_id]
        own = chunks.get(cand.document_id, [])
        matching = sorted((c for c in own if c["id"] in chunk_scores), key=lambda c: chunk_scores[c["id"]])
        best: sqlite3.Row | None
        if run.granularity == "chunk":
            best = chunk_by_id[next(iter(cand.chunks))]
            scope_chunks = [best["id"]]
            size, tokens = best["size_bytes"], best["est_tokens"]
        else:
            best = matching[0] if matching else (own[0] if own else None)
            scope_chunks = [c["id"] for c in own]
            size, tokens = doc["size_bytes"], doc["est_tokens"]
        if max_tokens is not None and total + tokens > max_tokens:
            truncated = True
            break
        total += tokens
        why, coverage = presence.explain(cand, scope_chunks)
        strength = cand.score / top_score[cand.tier] if top_score.get(cand.tier) else 1.0
        relevance = LAYER_WEIGHT[cand.layer] * coverage * (0.8 + 0.2 * max(0.0, min(strength, 1.0)))
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
            score=round(cand.score, 4),
            relevance=round(relevance, 3),
            match_layer=cand.layer,
            why_relevant=why,
            snippet=_snippet(conn, best, any_match) if best is not None else doc["description"],
            line_start=best["line_start"] if best is not None else None,
            line_end=best["line_end"] if best is not None else None,
            size_bytes=size,
            est_tokens=tokens,
            scope=doc["scope"],
            platform=doc["platform"],
        )
        if run.granularity == "chunk" and best is not None:
            hit.chunk_id, hit.heading = best["id"], best["heading"]
            hit.matching_chunks = [_chunk_info(best, chunk_scores.get(best["id"]))]
        else:
            hit.matching_chunks = [
                _chunk_info(c, chunk_scores[c["id"]]) for c in matching[:MAX_MATCHING_CHUNKS]
            ]
        if full_text:
            hit.text = _text(
                conn, [best["id"]] if run.granularity == "chunk" and best else [c["id"] for c in own]
            )
        hits.append(hit)
    return hits, truncated


def _chunk_info(c: sqlite3.Row, score: float | None) -> dict[str, Any]:
    info: dict[str, Any] = {
        "chunk_id": c["id"],
        "seq": c["seq"],
        "heading": c["heading"],
        "line_start": c["line_start"],
        "line_end": c["line_end"],
        "est_tokens": c["est_tokens"],
        "score": round(-score, 4) if score is not None else None,
    }
    meta = json.loads(c["meta"] or "{}")
    if meta:
        info.update(meta)
    return info


def _scores(conn: sqlite3.Connection, match: str, chunk_ids: list[int]) -> dict[int, float]:
    if not chunk_ids:
        return {}
    rows = conn.execute(db.query("rank_chunks_in_documents"), {"match": match, "ids": json.dumps(chunk_ids)})
    return {r["id"]: r["score"] for r in rows}


def _snippet(conn: sqlite3.Connection, chunk: sqlite3.Row, match: str) -> str:
    if match:
        row = conn.execute(
            db.query("snippet"),
            {
                "match": match,
                "chunk_id": chunk["id"],
                "open": SNIPPET_OPEN,
                "close": SNIPPET_CLOSE,
            },
        ).fetchone()
        if row and row[0]:
            return " ".join(row[0].split())
    text = " ".join(chunk["text"].split())
    return text[:200] + ("…" if len(text) > 200 else "")


def _text(conn: sqlite3.Connection, chunk_ids: list[int]) -> str:
    rows = conn.execute(db.query("chunk_texts"), {"ids": json.dumps(chunk_ids)})
    return "\n\n".join(r[0] for r in rows)


class _Presence:
    "Which terms and synonyms each shown document (topics) and chunk (content) contains."

    def __init__(
        self, conn: sqlite3.Connection, terms: list[Term], doc_ids: list[int], chunk_ids: list[int]
    ) -> None:
        self.terms = terms
        self.in_topics: dict[str, set[int]] = {}
        self.in_chunks: dict[str, set[int]] = {}
        ids_d, ids_c = json.dumps(doc_ids), json.dumps(chunk_ids)
        for term in terms:
            for alt in [term, *term.synonyms]:
                if alt.phrase in self.in_topics:
                    continue
                self.in_topics[alt.phrase] = {
                    r[0]
                    for r in conn.execute(db.query("term_in_documents"), {"match": alt.phrase, "ids": ids_d})
                }
                self.in_chunks[alt.phrase] = {
                    r[0] for r in conn.execute(db.query("score_chunks"), {"match": alt.phrase, "ids": ids_c})
                }

    def explain(self, cand: _Candidate, chunk_ids: list[int]) -> tuple[dict[str, Any], float]:
        "why_relevant for one result, and the share of key terms it covers (synonyms 0.8)."
        chunks = set(chunk_ids)
        matched: list[dict[str, Any]] = []
        via: list[dict[str, Any]] = []
        missing: list[str] = []
        covered = 0.0
        for term in self.terms:
            where = self._where(term, cand.document_id, chunks)
            if where:
                matched.append({"term": term.text, "fields": where})
                covered += 1.0
                continue
            for syn in term.synonyms:
                where = self._where(syn, cand.document_id, chunks)
                if where:
                    via.append({"term": term.text, "synonym": syn.text, "fields": where})
                    covered += SYNONYM_COVERAGE
                    break
            else:
                missing.append(term.text)
        mode = "all terms" if cand.tier <= 4 else "any term"
        parts = [f"{m['term']} [{', '.join(m['fields'])}]" for m in matched]
        parts += [f"{v['synonym']} (synonym of {v['term']}) [{', '.join(v['fields'])}]" for v in via]
        summary = f"layer {cand.layer} ({LAYER_NAMES[cand.layer]}, {mode}): " + (
            "; ".join(parts) or "raw FTS5 query"
        )
        if missing:
            summary += f"; not found: {', '.join(missing)}"
        why = {
            "layer": cand.layer,
            "layer_name": LAYER_NAMES[cand.layer],
            "match": "all" if cand.tier <= 4 else "any",
            "terms": matched,
            "synonyms": via,
            "missing": missing,
            "summary": summary,
        }
        coverage = covered / len(self.terms) if self.terms else 1.0
        return why, coverage

    def _where(self, term: Term, doc_id: int, chunks: set[int]) -> list[str]:
        where = []
        if doc_id in self.in_topics.get(term.phrase, ()):
            where.append("topics")
        if chunks & self.in_chunks.get(term.phrase, set()):
            where.append("content")
        return where
