"""Iterative refinement: search, evaluate what was found, refine from it, search again.

Each round runs the cascade, scores its results (``relevance``, 0-1), and proposes the next
round from what it found: the words its best results are filed under (titles, tags, topics)
that the query does not already use, weighted by how many of those results share them and
how rare they are in the index; and the namespaces its results left thin (fewer than
``ranking.THIN_NAMESPACE`` results) or unsearched (a sibling of a namespace found, with no
result), which the next round searches alone, each under its own namespace filter. Each
round records its gaps: key terms no result holds, areas suggested and not yet searched,
and too many or too few results -- terms not found and too few results are critical. The
loop stops at the first of:

- 3 or more results with relevance >= 0.7 -- enough to answer from;
- a round that brings fewer than 2 new results;
- a round whose results overlap the previous round's by more than 90%;
- no critical gap left, and no suggested namespace left to search;
- every namespace suggested so far searched;
- 3 rounds;
- nothing left to refine with.

Results of all rounds are fused by reciprocal rank, the first round counting most, so a
refinement can promote what the question's own words ranked low but never push out what
they ranked first. Every round's findings, coverage and suggestions are kept for ``--json``.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from memdex.models import Hit, SearchResult
from memdex.query import latest, ranking
from memdex.query.engine import Engine, given_or_own
from memdex.query.request import Filters, SearchRequest, as_request
from memdex.query.search import search
from memdex.query.terms import is_date_word, parse_query
from memdex.query.themes import patterns_noticed
from memdex.store import db
from memdex.tokens import STOPWORDS, tokens, word_tokens, words
from memdex.utils import Budget

if TYPE_CHECKING:
    from memdex.answer.claude import Claude

MAX_ROUNDS = 3
GOOD_RELEVANCE = 0.7
ENOUGH_GOOD = 3
MIN_NEW = 2
MAX_OVERLAP = 0.9
TERMS_PER_ROUND = 3
SUGGEST_FROM = 5  # a round's best results that suggest the next round's terms

# (question, findings of the round just run, memdex's own suggestions) -> terms; raises
# memdex.llm.Unavailable when it cannot
Proposer = Callable[[str, list[Hit], list[str]], list[str]]


@dataclass
class Round:
    "One dispatch of the cascade and what it found."

    number: int
    query: str
    result: SearchResult
    new: list[int] = field(default_factory=list)  # document ids not seen in earlier rounds
    overlap: float = 0.0  # share of this round's results the previous round also found
    relevance: float = 0.0  # mean relevance of its three best results
    coverage: dict[str, Any] = field(default_factory=dict)
    suggestions: dict[str, list[str]] = field(default_factory=dict)
    proposed_by: str = "question"  # question | memdex | claude
    note: str = ""
    namespaces: list[str] = field(default_factory=lambda: ["all"])  # what this round searched
    gaps: dict[str, Any] = field(default_factory=dict)
    files_searched: int = 0  # documents the round's searches could reach under their filters
    files_matched: int = 0  # documents they matched (not chunks)

    def evaluate(
        self,
        conn: sqlite3.Connection,
        earlier: list[Round],
        filters: Filters | None,
        searched: list[str] | None = None,
        limit: int = 10,
    ) -> None:
        """Score this round against the earlier ones: new, overlap, relevance, coverage, gaps
        and suggestions. ``searched``: every namespace searched so far, this round's included."""
        hits = self.result.hits
        ids = _ids(hits)
        seen = {i for r in earlier for i in _ids(r.result.hits)}
        self.new = [i for i in dict.fromkeys(ids) if i not in seen]
        if earlier and ids:
            before = set(_ids(earlier[-1].result.hits))
            self.overlap = sum(1 for i in ids if i in before) / len(ids)
        top = sorted((h.relevance for h in hits), reverse=True)[:3]
        self.relevance = sum(top) / len(top) if top else 0.0
        best = list(dict.fromkeys(h.id for h in hits if h.relevance > 0))[:SUGGEST_FROM]
        docs = _documents(conn, best)
        per_document = {h.id: h for h in reversed(hits)}  # a document once, at its best hit
        namespaces = Counter(h.namespace for h in per_document.values() if h.namespace)
        searched = searched or [(filters.namespace if filters and filters.namespace else None) or "all"]
        suggested = _thin_or_unsearched(conn, namespaces, searched)
        self.coverage = {
            "namespaces_searched": list(searched),
            "namespaces_found": sorted(namespaces),
            "namespaces_suggested": suggested,
        }
        self.gaps = _gaps(self.result, suggested, limit)
        tags = Counter(t for d in docs for t in d["tags"])
        self.suggestions = {
            "terms": _terms(conn, self.result, docs),
            "tags": [t for t, n in tags.most_common() if n >= 2][:5],
            "topics": _topics(docs),
            "namespaces": suggested,
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "round": self.number,
            "query": self.query,
            "proposed_by": self.proposed_by,
            "terms": self.result.terms,
            "namespaces": self.namespaces,
            "filters": self.result.filters,
            "found": self.result.found,
            "files_searched": self.files_searched,
            "files_matched": self.files_matched,
            "new": len(self.new),
            "overlap": round(self.overlap, 3),
            "relevance": round(self.relevance, 3),
            "findings": self.findings(),
            "gaps": self.gaps,
            "coverage": self.coverage,
            "suggestions": self.suggestions,
            **({"note": self.note} if self.note else {}),
        }

    def findings(self) -> list[dict[str, Any]]:
        "One finding a document (its best hit), with what it is and evidence to judge it by."
        out: dict[int, dict[str, Any]] = {}
        for h in self.result.hits:
            if h.id in out:
                continue
            out[h.id] = {
                "id": h.id,
                "chat_id": h.key,
                "title": h.title,
                "file": h.path,
                "namespace": h.namespace,
                "type": h.type,
                "tags": h.tags,
                "relevance": h.relevance,
                "relevance_label": ranking.relevance_label(h.relevance),
                "match_layer": h.match_layer,
                "evidence": _evidence(h),
                "new": h.id in self.new,
            }
        return list(out.values())


@dataclass
class Refinement:
    question: str
    rounds: list[Round]
    stopped: str
    result: SearchResult  # the fused results of every round

    @property
    def coverage(self) -> dict[str, list[str]]:
        "The namespaces every round searched, those suggested, and those suggested, not searched."
        searched = self.rounds[-1].coverage.get("namespaces_searched", []) if self.rounds else []
        suggested = [ns for r in self.rounds for ns in r.coverage.get("namespaces_suggested", [])]
        suggested = list(dict.fromkeys(suggested))
        return {
            "namespaces_searched": list(dict.fromkeys(searched)),
            "namespaces_suggested": suggested,
            "not_searched": [ns for ns in suggested if ns not in searched],
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "rounds": [r.to_dict() for r in self.rounds],
            "stopped": self.stopped,
            "coverage": self.coverage,
        }


def refine(
    conn: sqlite3.Connection,
    request: SearchRequest | str,
    *,
    max_rounds: int = MAX_ROUNDS,
    proposer: Proposer | None = None,
    search_text: str | None = None,
    engine: Engine | None = None,
    **options: Any,
) -> Refinement:
    """Search for ``question`` in up to ``max_rounds`` rounds, each refined from the last.

    :param proposer: proposes the next round's terms (``--llm-refine``); when it raises
        :class:`~memdex.llm.Unavailable`, memdex's own suggestions are used and the round
        says why
    :param search_text: what to search for, when it differs from the question (a timeline
        question without its framing words)
    :param engine: keeps the query encoder and vectors from round to round (``query.engine``)
    """
    from memdex.answer.claude import Unavailable

    request = as_request(request, options)
    question, limit, filters = request.query, request.limit, request.filters
    base = search_text or question
    rounds: list[Round] = []
    used: set[str] = set(tokens(base))
    query, proposed_by, note = base, "question", ""
    stopped = f"{max_rounds} round{'s' if max_rounds != 1 else ''}"
    searched = [filters.namespace or "all"]
    areas: list[str] = []  # namespaces the next round searches alone
    suggested_ever: set[str] = set()
    # A chunk search chooses its passages within the budget (memdex.query.passages): an answer sends
    # the ones it chose. Documents are searched without one and cut to it when fused.
    budget = request.max_tokens if request.granularity == "chunk" else None
    with given_or_own(engine) as engine:  # the rounds share one: encoder and vectors loaded once
        for number in range(1, max_rounds + 1):
            fresh_terms = number == 1 or query != rounds[-1].query
            result, reach = _dispatch(
                conn,
                request.with_changes(query=query, max_tokens=budget, patterns=False),
                areas,
                fresh_terms,
                engine,
            )
            searched += areas
            current = Round(number, query, result, proposed_by=proposed_by, note=note)
            current.namespaces = [filters.namespace or "all"] if fresh_terms else []
            current.namespaces += areas
            current.files_searched, current.files_matched = reach
            current.evaluate(conn, rounds, filters, searched, limit)
            rounds.append(current)
            suggested_ever |= set(current.coverage["namespaces_suggested"])
            reason = _stop_reason(rounds, limit, suggested_ever, searched)
            if reason:
                stopped = reason
                break
            if number == max_rounds:
                break
            areas = current.coverage["namespaces_suggested"]
            local = _fresh(current.suggestions["terms"], used)
            proposed, proposed_by, note = local[:TERMS_PER_ROUND], "memdex", ""
            if proposer is not None:
                try:
                    mine = _fresh(proposer(question, result.hits, local), used)
                    proposed, proposed_by = mine[:5] or proposed, "claude" if mine else "memdex"
                except Unavailable as exc:
                    note = f"Claude could not propose terms ({exc}); used memdex's suggestions"
            if not proposed and not areas:
                stopped = "nothing left to refine with: the results suggest no new terms or namespaces"
                break
            if proposed:
                used |= {s for t in proposed for s in tokens(t)}
                # The new words go first: a question at the term limit would otherwise cut them off.
                query = f"{' '.join(proposed)} {base}"
    fused = _fuse(rounds, limit, request.max_tokens)
    if request.patterns:  # the rounds' own searches leave them out: what the fused list shares
        fused.patterns = patterns_noticed(conn, fused.hits)
    return Refinement(question, rounds, stopped, fused)


def _dispatch(
    conn: sqlite3.Connection, request: SearchRequest, areas: list[str], everywhere: bool, engine: Engine
) -> tuple[SearchResult, tuple[int, int]]:
    """One round's searches: the query everywhere its filters allow (when its terms are new),
    then under each namespace of ``areas`` alone; their hits in that order, each once. Also
    (files searched, files matched): documents the searches could reach, and matched."""
    requests = [request] if everywhere else []
    requests += [request.with_changes(filters=replace(request.filters, namespace=ns)) for ns in areas]
    results = [search(conn, r, engine) for r in requests]
    reach = [_in_scope(conn, r.filters) for r in requests]
    searched = reach[0] if everywhere else sum(reach)  # areas lie inside "everywhere"
    matched = results[0].documents_found or 0 if everywhere else sum(r.documents_found or 0 for r in results)
    if len(results) == 1:
        return results[0], (searched, matched)
    seen = {_passage_key(h) for h in results[0].hits}
    hits = list(results[0].hits)
    for extra in results[1:]:
        for h in extra.hits:
            if _passage_key(h) not in seen:
                seen.add(_passage_key(h))
                hits.append(h)
    first = results[0]
    merged = replace(
        first,
        hits=hits,
        found=first.found + sum(r.found for r in results[1:]) if not everywhere else first.found,
        layers=[layer for r in results for layer in r.layers],
        notes=list(dict.fromkeys(n for r in results for n in r.notes)),
    )
    if not everywhere:
        merged.filters = {**first.filters, "namespace": areas}
    return merged, (searched, matched)


def _in_scope(conn: sqlite3.Connection, filters: Filters) -> int:
    return int(conn.execute(db.query("documents_in_scope"), filters.params()).fetchone()[0])


def _thin_or_unsearched(conn: sqlite3.Connection, found: Counter[str], searched: list[str]) -> list[str]:
    """Namespaces the next round should search alone: those this round found thinly (fewer
    than THIN_NAMESPACE results), then unsearched siblings of the namespaces it found (same
    first part, no result) -- never one already searched alone."""
    done = set(searched)
    thin = [ns for ns, n in sorted(found.items(), key=lambda x: (x[1], x[0])) if n < ranking.THIN_NAMESPACE]
    roots = {ns.split("/")[0] for ns in found}
    index = [r[0] for r in conn.execute(db.query("namespaces"))]
    siblings = sorted(ns for ns in index if ns.split("/")[0] in roots and ns not in found)
    out = [ns for ns in dict.fromkeys([*thin, *siblings]) if ns not in done]
    return out[: ranking.NAMESPACES_PER_ROUND]


def _gaps(result: SearchResult, suggested: list[str], limit: int) -> dict[str, Any]:
    "What a round left open; ``critical`` names the gaps that call for another round."
    key = [t.text for t in parse_query(result.query).key_terms]
    held = {
        t["term"]
        for h in result.hits
        for t in [*h.why_relevant.get("terms", []), *h.why_relevant.get("synonyms", [])]
    }
    documents = result.found if result.documents_found is None else result.documents_found
    gaps: dict[str, Any] = {
        "terms_not_found": [t for t in key if t not in held],
        "missing_areas": suggested,
        "too_many_results": documents > ranking.TOO_MANY_PER_LIMIT * limit,
        "too_few_results": documents < min(ENOUGH_GOOD, limit),
    }
    gaps["critical"] = [k for k in ("terms_not_found", "too_few_results") if gaps[k]]
    return gaps


def _evidence(h: Hit) -> str:
    "A finding's evidence: its snippet (or title) on one line, at most EVIDENCE_CHARS characters."
    text = " ".join((h.snippet or h.title).split())
    limit = ranking.EVIDENCE_CHARS
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _fresh(terms: list[str], used: set[str]) -> list[str]:
    """Terms worth adding: not already searched, and not month or year words, which a query
    reads as date filters -- a proposed "November" must not narrow the next round."""
    out = []
    for term in terms:
        if not isinstance(term, str) or not words(term):
            continue
        if all(s in used for s in tokens(term)) or any(is_date_word(w) for w in term.split()):
            continue
        out.append(term)
    return out


def claude_proposer(claude: Claude) -> Proposer:
    "A proposer that asks Claude for the next round's terms (``--llm-refine``)."

    def propose(question: str, hits: list[Hit], suggestions: list[str]) -> list[str]:
        from memdex.answer.claude import Unavailable
        from memdex.answer.prompts import REFINE_SYSTEM, REFINE_TOOL, refine_prompt

        reply = claude.call(REFINE_SYSTEM, refine_prompt(question, hits, suggestions), REFINE_TOOL, 256)
        terms = reply.data.get("terms")
        if not isinstance(terms, list):
            raise Unavailable("the reply held no terms")
        return [t.strip() for t in terms if isinstance(t, str) and t.strip()][:5]

    return propose


def _ids(hits: list[Hit]) -> list[int]:
    return [h.id for h in hits]


def _documents(conn: sqlite3.Connection, ids: list[int]) -> list[dict[str, Any]]:
    rows = {r["id"]: r for r in conn.execute(db.query("hit_documents"), {"ids": json.dumps(ids)})}
    return [
        {
            "title": rows[i]["title"],
            "tags": json.loads(rows[i]["tags"]),
            "topics": json.loads(rows[i]["topics"]),
        }
        for i in ids
        if i in rows
    ]


def _topics(docs: list[dict[str, Any]]) -> list[str]:
    counts = Counter(t.casefold() for d in docs for t in dict.fromkeys(d["topics"]))
    return [t for t, n in counts.most_common(8) if n >= 2 or len(docs) == 1][:8]


def _terms(conn: sqlite3.Connection, result: SearchResult, docs: list[dict[str, Any]]) -> list[str]:
    """Words the best results are filed under and the query lacks: in how many of them, times
    how rare in the index (idf), so shared, specific words come first."""
    asked = {s for t in parse_query(result.query).terms for s in tokens(" ".join(t.tokens))}
    shown: dict[str, str] = {}
    counts: Counter[str] = Counter()
    for d in docs:
        text = " ".join([d["title"], *d["tags"], *d["topics"]])
        stems = set()
        for word in words(text):
            if len(word) < 3 or word.isdigit() or word in STOPWORDS:
                continue
            for s in word_tokens(word):
                if s not in asked:
                    shown.setdefault(s, word if len(word_tokens(word)) == 1 else s)
                    stems.add(s)
        counts.update(stems)
    if not counts:
        return []
    idf = ranking.index_idf(conn, list(counts))
    minimum = 2 if len(docs) >= 3 else 1  # one result's words alone would drift the next round
    score = {s: n * idf[s] for s, n in counts.items() if n >= minimum and s in idf}
    return [shown[s] for s in sorted(score, key=lambda s: (-score[s], s))][:8]


def _stop_reason(
    rounds: list[Round], limit: int, suggested: set[str] | None = None, searched: list[str] | None = None
) -> str | None:
    last = rounds[-1]
    good = {h.id for r in rounds for h in r.result.hits if h.relevance >= GOOD_RELEVANCE}
    if len(good) >= min(ENOUGH_GOOD, limit):
        return f"{len(good)} results with relevance >= {GOOD_RELEVANCE}"
    if not last.result.hits and len(rounds) == 1 and not last.suggestions.get("terms"):
        return "nothing found"
    if len(rounds) >= 2:
        if len(last.new) < MIN_NEW:
            plural = "s" if len(last.new) != 1 else ""
            return f"round {last.number} brought {len(last.new)} new result{plural}"
        if last.overlap > MAX_OVERLAP:
            return f"round {last.number} overlapped the previous round by {last.overlap:.0%}"
    if last.gaps and not last.gaps["critical"] and not last.gaps["missing_areas"]:
        return "no critical gap left"
    if len(rounds) >= 2 and suggested and suggested <= set(searched or []):
        return "every suggested namespace searched"
    return None


def _passage_key(h: Hit) -> tuple[int, int | None, int | None]:
    "What a hit hands out: a document, a chunk of it, or a window of messages (its first message)."
    return h.id, h.chunk_id, h.passage.msg_start if h.passage is not None else None


def _fuse(rounds: list[Round], limit: int, max_tokens: int | None) -> SearchResult:
    "One ranked list from every round's results (reciprocal-rank fusion)."
    first = rounds[0].result
    score: dict[tuple[int, int | None, int | None], float] = {}
    hit_of: dict[tuple[int, int | None, int | None], Hit] = {}
    for r in rounds:
        for rank, h in enumerate(r.result.hits):
            key = _passage_key(h)
            score[key] = score.get(key, 0.0) + ranking.fuse_rounds(rank, later=r.number > 1)
            hit_of.setdefault(key, h)
    ordered = sorted(score, key=lambda k: -score[k])
    hits: list[Hit] = []
    budget, truncated = Budget(max_tokens), False
    for key in ordered[:limit]:
        h = hit_of[key]
        if not budget.take(h.est_tokens):
            truncated = True
            break
        hits.append(replace(h, score=round(score[key], 4)) if len(rounds) > 1 else h)
    new_later = sum(len(r.new) for r in rounds[1:])
    notes = list(dict.fromkeys(n for r in rounds for n in r.result.notes))
    if len(rounds) > 1 and first.granularity == "chunk" and parse_query(first.query).about_now:
        # each round put its newest first: the fused list is ordered so once more, as a whole
        hits = latest.newest_first(hits, first.terms)
        notes = [n for n in notes if not n.startswith(latest.NOTE)]
        if said := latest.note(hits):
            notes.append(said)
    return replace(
        first,
        hits=hits,
        found=first.found + new_later,
        found_is_total=first.found_is_total and new_later == 0,
        layers=[layer for r in rounds for layer in r.result.layers],
        truncated_by_budget=truncated,
        notes=notes,
    )
