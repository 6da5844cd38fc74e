"""An answer without a model: the sentences of the sources that best match the question.

Used when there is no API key, no network, or the API fails. Each sentence is scored like a
chunk (the query's words and synonyms, weighted by how rare they are in the index), at most
two are taken from one source, and each is quoted as written with its source's number, so
an extractive answer is cited exactly as a synthesised one is and says plainly what it is.
"""

from __future__ import annotations

import re
import sqlite3
from dataclasses import dataclass
from typing import Any

from memdex.answer import citations
from memdex.answer.sources import Source
from memdex.query import synonyms
from memdex.query.results import explainer_for
from memdex.query.terms import parse_query

MAX_DETAILS = 6
PER_SOURCE = 2
MAX_CHARS = 400
_SPEAKER = re.compile(r"^(User|Assistant|Human|Claude|ChatGPT|Gemini|System|Tool)\s*:\s*", re.IGNORECASE)
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+(?=[\"'(\[]?[A-Z0-9])|(?<=[。！？])")
# Abbreviations a sentence does not end at: "Dr. Smith agreed." is one sentence.
_ABBREVIATION = re.compile(r"\b(Dr|Mr|Mrs|Ms|Prof|St|No|Fig|vs|etc|e\.g|i\.e|approx|cf)\.$", re.IGNORECASE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]")
_MARKUP = re.compile(r"^\s*(#{1,6}\s+|[-*+]\s+(\[[ xX]\]\s+)?|\d+[.)]\s+|>\s*)")


@dataclass
class Extract:
    summary: str
    details: list[tuple[str, int, float]]  # (sentence, source number, confidence)


def extract(conn: sqlite3.Connection, query: str, sources: list[Source], timeline: bool) -> Extract:
    terms = parse_query(query).key_terms
    explainer = explainer_for(conn, synonyms.expand(conn, terms) if terms else [])
    scored: list[tuple[float, int, int, str]] = []  # (score, source n, position, sentence)
    relevance = {s.n: s.hit.relevance for s in sources}
    for source in sources:
        position = 0
        for passage in source.passages:
            for sentence in sentences(passage.text):
                # A sentence counts its words, and how well its source as a whole matched.
                score = explainer.chunk_score(explainer.tokens(sentence)) * (0.5 + relevance[source.n])
                scored.append((score, source.n, position, sentence))
                position += 1
    best = _choose(scored)
    if not best:  # no sentence holds a query word: each source's opening stands for it
        best = [(0.0, s.n, 0, _opening(s.passages[0].text)) for s in sources][:MAX_DETAILS]
    top = max(best, key=lambda b: b[0])
    # Sources are numbered by rank, or by date for a timeline: either way, their order.
    best.sort(key=lambda b: (b[1], b[2]))
    # A claim's confidence: its source's relevance, scaled by how well the sentence itself
    # matches the question against the best sentence found.
    details = [
        (
            citations.neutralize(_clip(sentence)),
            n,
            relevance[n] * (0.5 + 0.5 * (score / top[0] if top[0] > 0 else 0.0)),
        )
        for score, n, _, sentence in best
    ]
    title = next(s.hit.title for s in sources if s.n == top[1])
    summary = f"The best match is “{title}” [{top[1]}]: {citations.neutralize(_clip(top[3]))}"
    if timeline:
        summary += " The details follow the sources' dates, oldest first."
    return Extract(summary, details)


def dated(sources: list[Source], period: str, themes: list[dict[str, Any]]) -> Extract:
    """A period's timeline without a model: each source's opening sentence under its date,
    oldest first (the sources' order), and what the period was about (its themes)."""
    details = [
        (
            f"{(s.hit.own_date or 'undated')[:10]}: {s.hit.title} — "
            f"{citations.neutralize(_clip(_opening(s.passages[0].text)))}",
            s.n,
            s.hit.relevance,
        )
        for s in sources
        if s.passages
    ]
    about = ", ".join(f"{t['term']} ({t['count']})" for t in themes[:5])
    summary = f"What is dated {period}, oldest first: {len(details)} sources."
    if about:
        summary += f" Most of them are about {about}."
    return Extract(summary, details)


def _choose(scored: list[tuple[float, int, int, str]]) -> list[tuple[float, int, int, str]]:
    taken: dict[int, int] = {}
    seen: set[str] = set()
    out = []
    for item in sorted(scored, key=lambda s: (-s[0], s[1], s[2])):
        score, n, _, sentence = item
        key = " ".join(sentence.casefold().split())
        if score <= 0 or taken.get(n, 0) >= PER_SOURCE or key in seen:
            continue
        taken[n] = taken.get(n, 0) + 1
        seen.add(key)
        out.append(item)
        if len(out) >= MAX_DETAILS:
            break
    return out


def sentences(text: str) -> list[str]:
    """Sentences of a passage: paragraphs (code blocks left out) split at sentence ends, with
    the speaker kept on every sentence of a chat message ("Assistant: ...")."""
    out = []
    speaker = ""
    paragraph: list[str] = []

    def flush() -> None:
        nonlocal speaker
        if not paragraph:
            return
        para = " ".join(paragraph)
        paragraph.clear()
        m = _SPEAKER.match(para)
        if m:
            speaker, para = m.group(1), para[m.end() :]
        for piece in _split(para):
            if len(piece.split()) >= 4 or len(_CJK.findall(piece)) >= 6:
                out.append(f"{speaker}: {piece}" if speaker else piece)

    # Imported here: memdex.ingest loads every parser, and only an answer without a model
    # reads fences.
    from memdex.ingest.structure import structure_of

    lines = text.splitlines()
    fenced = structure_of("\n".join(lines)).fenced  # read from the very lines walked here
    for i, line in enumerate(lines):
        if i in fenced:
            flush()  # fenced code is not prose, and a fence ends a paragraph
            continue
        if not paragraph and line.startswith(("    ", "\t")):
            continue  # nor is indented code
        stripped = _MARKUP.sub("", line).strip()
        if not stripped or line.lstrip().startswith(("#", "|")):
            flush()  # blank lines, headings and table rows end a paragraph; none is a sentence
            continue
        if _SPEAKER.match(stripped) or _MARKUP.match(line):
            flush()  # a new message or a list item starts a new paragraph
        paragraph.append(stripped)
    flush()
    return out


def _split(paragraph: str) -> list[str]:
    "A paragraph cut at sentence ends, except after abbreviations."
    out: list[str] = []
    for piece in _SENTENCE_END.split(paragraph):
        piece = piece.strip()
        if not piece:
            continue
        if out and _ABBREVIATION.search(out[-1]):
            out[-1] = f"{out[-1]} {piece}"
        else:
            out.append(piece)
    return out


def _opening(text: str) -> str:
    "The first sentence of a passage, else its first 200 characters: text, never a title."
    first = next(iter(sentences(text)), "")
    return first or " ".join(text.split())[:200]


def _clip(sentence: str) -> str:
    if len(sentence) <= MAX_CHARS:
        return sentence
    cut = sentence[:MAX_CHARS]
    return cut[: cut.rfind(" ")] + " …" if " " in cut else cut + " …"
