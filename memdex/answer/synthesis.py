"""Answer mode: refine the search, pack the best passages, synthesise a cited answer.

With a key, Claude writes the answer through one forced tool call (``llm``, ``prompts``);
the sources go into the prompt as quoted, escaped data, never as instructions. The reply is
checked field by field and every citation in it against the sources that were sent: an
unknown one is dropped and named in the caveats, and a reply of the wrong shape counts as
no reply. Without a key, offline, or when the API fails, the answer is extractive
(``extractive``): the best sentences of the sources, cited the same way, saying it is
extractive and why. Either way the layout is the same: summary, numbered details with
inline citations [n] and a confidence each, grouped by category, an analysis connecting them
(``categories``), caveats, sources with the claims each supports, and the paths to verify.

Only sources of relevance 0.5 or more are sent (``ranking.SOURCE_FLOOR``), unless none
reaches it: then every result found goes, and the caveats say so.
"""

from __future__ import annotations

import math
import re
import sqlite3
from typing import Any

from memdex.answer import categories, citations, modes
from memdex.answer.answers import Answer, Detail
from memdex.answer.claude import Claude, Settings, Unavailable
from memdex.answer.extractive import dated, extract
from memdex.answer.prompts import ANSWER_SYSTEM, ANSWER_TOOL, answer_prompt
from memdex.answer.refine import MAX_ROUNDS, claude_proposer, refine
from memdex.answer.sources import DEFAULT_BUDGET, pack
from memdex.models import Hit
from memdex.query import ranking
from memdex.query.engine import Engine
from memdex.query.period import describe
from memdex.query.request import SearchRequest, as_request
from memdex.query.terms import ParsedQuery, parse_query

# Answers rank chunks, not documents: the passage a question is about, with its conversation
# or file as context, is what the model needs (scripts/eval_answers.py). Up to this many
# chunks per source are searched for.
CHUNKS_PER_SOURCE = 3
NO_LLM = "the model was not asked (--no-llm)"
WHY_CHARS = 120  # a source's why-cited quotes at most this much of the claim it supports


def answer(
    conn: sqlite3.Connection,
    request: SearchRequest | str,
    *,
    rounds: int = MAX_ROUNDS,
    use_llm: bool = True,
    llm_refine: bool = False,
    settings: Settings | None = None,
    min_relevance: float | None = None,
    engine: Engine | None = None,
    **options: Any,
) -> Answer:
    """Answer ``question`` from the index, with citations.

    The request's query is the question; its ``limit`` caps the sources and its
    ``max_tokens`` is the budget of source text sent to the model (estimated tokens).

    :param use_llm: False answers extractively without looking for a key
    :param llm_refine: Claude proposes each next round's search terms
    :param min_relevance: send only sources with a passage of at least this relevance, unless
        none has one (default ``ranking.SOURCE_FLOOR``, 0.5; 0 sends every source that fits)
    With ``full_text``, ``to_dict()`` includes the text of every passage sent.
    """
    request = as_request(request, options)
    question, limit, max_tokens = request.query, request.limit, request.max_tokens
    full_text = request.full_text
    timeline = modes.is_timeline(question)
    text = modes.subject(question)
    parsed = parse_query(text)
    # "what happened in October?": a timeline of the period, from what is dated in it
    period = describe_period(parsed) if parsed.date_only else None
    out = Answer(
        question, "", [], [], [], "extractive", None, timeline=timeline or bool(period), period=period
    )
    out.full_text = full_text
    if not period and not [t for t in parsed.terms if not t.stop]:
        out.summary = f"{question!r} has no words to search for, only words like what, how and why."
        out.reason = "nothing to search for: add the words the answer is about"
        return out
    claude: Claude | None = None
    reason = NO_LLM
    if use_llm:
        try:
            claude = Claude(settings or Settings.from_env())
        except Unavailable as exc:
            reason = str(exc)
    if llm_refine and claude is None:
        out.caveats.append(f"--llm-refine had no model to ask ({reason}); memdex refined on its own")
    if period:  # the period's documents, one passage each: nothing to refine
        searched = request.with_changes(granularity="doc", max_tokens=None, full_text=False)
        rounds, llm_refine = 1, False
    else:
        # the passages a chunk search hands out within the answer's budget are the ones sent
        searched = request.with_changes(
            limit=limit * CHUNKS_PER_SOURCE,
            granularity="chunk",
            max_tokens=max_tokens or DEFAULT_BUDGET,
            full_text=False,
        )
    out.refinement = refine(
        conn,
        searched,
        max_rounds=rounds,
        proposer=claude_proposer(claude) if llm_refine and claude is not None else None,
        search_text=text,
        engine=engine,
    )
    if period and out.refinement.result.period is None:  # nothing dated then: its words were searched
        out.period, out.timeline = None, timeline
    floor = ranking.SOURCE_FLOOR if min_relevance is None else min_relevance
    hits = out.refinement.result.hits if period else _relevant(out, out.refinement.result.hits, floor)
    out.sources = pack(conn, hits, max_tokens or DEFAULT_BUDGET, out.timeline, limit)
    if out.period and out.sources:
        out.caveats.append(_period_coverage(out))
    if not out.sources and out.period:  # a relative date nothing is dated in
        out.summary = f"Nothing in the index is dated {out.period}: ask about another time."
        out.reason = "nothing dated then"
        return out
    if not out.sources:
        out.summary = (
            f"Nothing in the index matches {question!r}: try fewer or other words, or drop a filter."
        )
        out.reason = "nothing found"
        return out
    if claude is not None:
        try:
            return _synthesise(claude, out)
        except Unavailable as exc:
            reason = f"Claude was not available: {exc}"
    return _extractive(conn, out, reason, text)


def _relevant(out: Answer, hits: list[Hit], floor: float) -> list[Hit]:
    """The results worth sending: the documents with a passage of relevance ``floor`` or more.
    When none has one, every result, and a caveat saying the answer rests on weak matches."""
    if floor <= 0:
        return hits
    # A source is a document: its relevance is its best passage's, and its other passages
    # (the same conversation's other matching chunks) go with it.
    relevant = {h.id for h in hits if h.relevance >= floor}
    strong = [h for h in hits if h.id in relevant]
    weak = len({h.id for h in hits}) - len(relevant)
    if strong and weak:
        out.caveats.append(
            f"{weak} result{'s' if weak != 1 else ''} of relevance below {floor} "
            f"{'were' if weak != 1 else 'was'} not sent: {'they match' if weak != 1 else 'it matches'} "
            "the question only in part."
        )
    if not strong and hits:
        # Everything found, as with no floor: sending only the best-matching few would keep a
        # stricter floor from sending more, but it cut the right evidence among the sources
        # sent (scripts/eval_answers.py --no-llm, Serena) from 0.847 to 0.733.
        best = max(h.relevance for h in hits)
        out.caveats.append(
            f"No result reached relevance {floor} (the best: {best:.2f}), so every result found "
            "was sent, as with no floor: they match the question only in part; treat the answer "
            "as weak."
        )
        return hits
    return strong


def describe_period(parsed: ParsedQuery) -> str:
    "The period a question of dates alone asks about, in words: 'last week (… to …)'."
    return describe(parsed.date_words, *parsed.window())


def _themes(out: Answer) -> list[dict[str, Any]]:
    return out.refinement.result.themes if out.refinement else []


def _period_coverage(out: Answer) -> str:
    "How much of the period the answer saw: all of it, or its newest documents."
    assert out.refinement is not None
    found = out.refinement.result.found
    if len(out.sources) >= found:
        return f"Built from all {found} documents dated {out.period}, one passage each."
    return (
        f"{found} documents are dated {out.period}; this timeline is built from the "
        f"{len(out.sources)} newest, one passage each (raise --limit for more)."
    )


# -- with Claude ------------------------------------------------------------------------------
def _synthesise(claude: Claude, out: Answer) -> Answer:
    prompt = answer_prompt(out.question, out.sources, out.timeline, out.period)
    reply = claude.call(ANSWER_SYSTEM, prompt, ANSWER_TOOL)
    data = reply.data
    summary, items = data.get("summary"), data.get("details")
    if not isinstance(summary, str) or not isinstance(items, list):
        raise Unavailable("the reply was not an answer (no summary, or details not a list)")
    sent = {s.n for s in out.sources}
    # Where each unsent citation was: "the summary", "the analysis", or a detail by its place
    # in the reply (named by its place in the answer once the details are ordered).
    dropped: dict[int, list[str | int]] = {}

    def checked(text: str, where: str | int) -> str:
        kept, gone = citations.keep_only(text, sent)
        for n in gone:
            dropped.setdefault(n, []).append(where)
        # any other bracket with a number in it is no citation: it must not read as one
        return citations.neutralize(kept, keep_citations=True)

    out.summary = checked(summary, "the summary")
    details: list[Detail] = []
    for item in items:
        if isinstance(item, str):  # a bare claim: its citations are the ones in its text
            item = {"text": item}
        if not isinstance(item, dict) or not isinstance(item.get("text"), str) or not item["text"].strip():
            raise Unavailable("the reply was not an answer (a detail without text)")
        where = len(details)
        listed = _numbers(item.get("citations"))
        for n in listed:
            if n not in sent:
                dropped.setdefault(n, []).append(where)
        text = checked(item["text"], where)
        inline = set(citations.cited(text))
        cited = sorted({n for n in listed if n in sent} | inline)
        missing = [n for n in cited if n not in inline]
        if missing:
            text += " " + "".join(f"[{n}]" for n in missing)
        category = item.get("category")
        category = " ".join(category.split())[:80] if isinstance(category, str) and category.strip() else None
        details.append(Detail(text, cited, _confidence(item.get("confidence")), category))
    replied = list(details)
    if out.timeline:  # oldest first, by the earliest source each claim cites: no categories
        dates = {s.n: s.hit.own_date or "9999" for s in out.sources}
        details.sort(key=lambda d: min((dates[c] for c in d.citations), default="9999"))
        for d in details:
            d.category = None
    else:
        for d in details:
            d.category = d.category or categories.UNFILED
        details = categories.grouped(details)
        out.grouped_by = "the model"
    out.details = details
    analysis = data.get("analysis")
    out.analysis = checked(analysis, "the analysis") if isinstance(analysis, str) else ""
    out.caveats += _strings(data.get("caveats"))
    for i, d in enumerate(details, 1):
        if not d.citations:
            out.caveats.append(f"Detail {i} cites no source: treat it as unsupported.")
            d.confidence = min(d.confidence, 0.2)
    shown_at = {id(d): i for i, d in enumerate(details, 1)}
    for n, places in sorted(dropped.items()):
        named = [p if isinstance(p, str) else f"detail {shown_at[id(replied[p])]}" for p in places]
        out.caveats.append(
            f"Dropped citation [{n}] ({', '.join(dict.fromkeys(named))}): no source {n} was sent."
        )
    why: dict[int, str] = {}
    for w in data.get("why_cited") or []:
        numbers = _numbers([w.get("source")]) if isinstance(w, dict) else []
        if numbers and isinstance(w.get("why"), str):
            why[numbers[0]] = w["why"]
    _mark_cited(out, why)
    out.method, out.model = "claude", reply.model
    out.usage = {"input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens}
    return out


def _numbers(value: object) -> list[int]:
    "Source numbers from a reply's citations field: ints, integral floats, decimal strings."
    if not isinstance(value, list):
        return []
    out = []
    for v in value:
        if isinstance(v, bool):
            continue
        if isinstance(v, int):
            out.append(v)
        elif isinstance(v, float) and v.is_integer():
            out.append(int(v))
        elif isinstance(v, str) and v.strip().isdecimal() and v.strip().isascii():
            out.append(int(v))
    return out


def _strings(value: object) -> list[str]:
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if not isinstance(value, list):
        return []
    return [v.strip() for v in value if isinstance(v, str) and v.strip()]


def _confidence(value: object) -> float:
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return 0.5
    return 0.5 if math.isnan(number) else max(0.0, min(1.0, number))


def _mark_cited(out: Answer, why: dict[int, str] | None = None) -> None:
    """Mark the sources the answer cites, each with the details it supports and why it is
    cited: what the model said it contributed, else the claim it supports, quoted."""
    uses: dict[int, list[int]] = {}
    for i, d in enumerate(out.details, 1):
        for c in d.citations:
            uses.setdefault(c, []).append(i)
    in_summary = set(citations.cited(out.summary))
    in_analysis = set(citations.cited(out.analysis))
    for s in out.sources:
        s.supports = uses.get(s.n, [])
        s.cited = bool(s.supports) or s.n in in_summary or s.n in in_analysis
        if not s.cited:
            continue
        if s.supports:
            label = "detail" if len(s.supports) == 1 else "details"
            places = f"{label} {', '.join(map(str, s.supports))}"
            claim = out.details[s.supports[0] - 1].text
        elif s.n in in_summary:
            places, claim = "the summary", out.summary
        else:
            places, claim = "the analysis", out.analysis
        said = (why or {}).get(s.n, "") or f"supports “{_claim(claim)}”"
        s.why_cited = f"{said} ({places})"


def _claim(text: str) -> str:
    "A claim as a source's why-cited quotes it: without citations, at most WHY_CHARS long."
    plain = " ".join(citations.CITATION.sub("", text).split())
    plain = re.sub(r" (?=[.,;:!?)])", "", plain)  # "Truncation [2]." -> "Truncation."
    return plain if len(plain) <= WHY_CHARS else plain[: WHY_CHARS - 1].rstrip() + "…"


# -- without a model ----------------------------------------------------------------------------
def _extractive(conn: sqlite3.Connection, out: Answer, reason: str, query: str) -> Answer:
    if out.period:
        found = dated(out.sources, out.period, _themes(out))
    else:
        found = extract(conn, query, out.sources, out.timeline)
    out.summary = found.summary
    out.details = [Detail(f"{text} [{n}]", [n], conf) for text, n, conf in found.details]
    if not out.timeline:
        out.grouped_by = categories.by_source(out.details, out.sources)
        out.details = categories.grouped(out.details)
        out.analysis = categories.connections(conn, out.details, out.sources)
    out.caveats.insert(
        0,
        f"Extractive answer: no model wrote it ({reason}). Each detail is a sentence quoted as "
        "written from its source; read the sources to judge them."
        + (
            f" Details are grouped by their sources' {out.grouped_by}, not by topic."
            if out.grouped_by
            else ""
        ),
    )
    out.method, out.reason = "extractive", reason
    _mark_cited(out)
    return out
