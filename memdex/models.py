"""Dataclasses shared by ingest, query and render."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

SIGNALS = ("has_decisions", "has_discoveries", "has_procedures", "has_artifacts")


def est_tokens(size_bytes: int) -> int:
    "Estimated tokens: bytes / 4, rounded up. An estimate, documented as one."
    return (size_bytes + 3) // 4


@dataclass
class Chunk:
    "A piece of a document: a markdown section, or a run of chat messages."

    heading: str
    text: str
    line_start: int | None = None
    line_end: int | None = None
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class Document:
    "What a parser found in a source file, before it is written to the index."

    key: str
    kind: str
    title: str
    chunks: list[Chunk]
    size_bytes: int
    description: str = ""
    tags: list[str] = field(default_factory=list)
    topics: list[tuple[str, str]] = field(default_factory=list)  # (topic, source)
    namespace: str | None = None
    type: str | None = None
    scope: str | None = None
    platform: str | None = None
    date: str | None = None
    # where the date came from: frontmatter | conversation | text | file name (None: no date)
    date_source: str | None = None
    created: str | None = None
    modified: str | None = None
    line_count: int = 0
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass
class IndexLink:
    "One row of a Serena index: keywords pointing at a file."

    line: int
    keywords: list[str]
    target: str  # absolute path
    label: str = ""


@dataclass
class ParsedFile:
    """Everything one source file contributes: documents, index rows if it is an index, and
    the records inside it that were skipped, each with why (record label, reason)."""

    kind: str
    documents: list[Document] = field(default_factory=list)
    links: list[IndexLink] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    tail: Any = None  # a session log: where reading stopped, to read on from (ingest.base.Tail)
    # A file read in part (a database of sessions, only those that changed): the keys of the
    # documents it holds that stay as indexed. None: ``documents`` are all of the file's.
    kept: list[str] | None = None


@dataclass
class Candidate:
    "A document (or, at chunk granularity, a chunk) the cascade found, before it is a Hit."

    document_id: int
    stage: int  # 1-4: all terms matched in that layer; 5: some terms, the any-term pass
    layer: int
    score: float  # higher is better; comparable within one stage
    chunks: dict[int, float] = field(default_factory=dict)  # chunk id -> score
    similarity: float | None = None  # cosine to the query, when the meaning pass found it
    fused: float = 0.0  # score after fusing words and meaning
    # It holds every key word and is dated in a time the query names loosely ("last
    # weekend"): it goes before the rest of its kind (Cascade.loose_first).
    dated_then: bool = False


@dataclass
class Hit:
    "One search result, a document or (at chunk granularity) one chunk of it."

    id: int
    key: str
    path: str
    title: str
    kind: str
    namespace: str | None
    type: str | None
    tags: list[str]
    date: str | None
    score: float
    relevance: float
    match_layer: int
    why_relevant: dict[str, Any]
    snippet: str
    line_start: int | None
    line_end: int | None
    size_bytes: int
    est_tokens: int
    matching_chunks: list[dict[str, Any]] = field(default_factory=list)
    scope: str | None = None
    platform: str | None = None
    chunk_id: int | None = None
    heading: str | None = None
    text: str | None = None
    location: str = ""  # where to read: path:lines, path (messages a-b), or an archive's chunk file
    # The document as a location names it: its path, or path#key when its file holds other
    # documents too (a chat export's conversations), so what a result prints names one.
    place: str = ""
    chat: dict[str, Any] | None = None  # for conversations: message_count, chunk_count, signals
    # where ``date`` came from: frontmatter | conversation | text | file name | mtime (the file's
    # modification time, shown for a document with no date of its own)
    date_source: str | None = None
    chunk_count: int = 0  # chunks the whole document has
    file_to_read: str = ""  # an archive's condensed chunk file; else empty: the source file
    # At chunk granularity in a conversation: the window of messages handed out (a
    # memdex.query.passages.Window); its text, messages and tokens are what the hit reports.
    passage: Any = None
    # When memdex noticed the document's file was deleted (its root keeps such documents:
    # ingest/departures.py); None while the file is there.
    source_deleted: str | None = None
    # An agent session's way back in: {argv, cwd, command} (doors/resume.py); None otherwise.
    resume: dict[str, Any] | None = None

    @property
    def own_date(self) -> str | None:
        "The document's own date: None when it has none and ``date`` is its file's mtime."
        return None if self.date_source == "mtime" else self.date

    def spec_fields(self) -> dict[str, Any]:
        """The spec's ``SearchResult``: its field names and types, from this hit.

        ``chat_id`` is the natural id (a chat's id, a memory's id or name); ``matching_chunks``
        the positions (0-based ``seq``) of the chunks that matched; ``condensed_path`` the file
        to read (an archive's condensed chunk file, else the source file)."""
        chat = self.chat or {}
        signals = chat.get("signals") or {}
        why = self.why_relevant or {}
        return {
            "chat_id": self.key,
            "title": self.title,
            "platform": self.platform,
            "date": self.date,
            "message_count": int(chat.get("message_count") or 0),
            "chunk_count": int(chat.get("chunk_count") or self.chunk_count or 0),
            "total_size_bytes": self.size_bytes,
            "estimated_tokens": self.est_tokens,
            **{name: bool(signals.get(name)) for name in SIGNALS},
            "matching_chunks": [int(c["seq"]) for c in self.matching_chunks or []],
            "condensed_path": self.file_to_read or self.path,
            "match_layer": self.match_layer,
            "relevance_score": self.relevance,
            "why_relevant": str(why.get("summary", "")),
        }

    def to_dict(self) -> dict[str, Any]:
        """The one shape of a result, for every door: the spec's fields first, then memdex's own
        (``why``, ``chunks``...)."""
        out = {
            **self.spec_fields(),
            "id": self.id,
            "key": self.key,
            "path": self.path,
            "kind": self.kind,
            "namespace": self.namespace,
            "type": self.type,
            "scope": self.scope,
            "tags": self.tags,
            "date_source": self.date_source,
            "score": self.score,
            "why": self.why_relevant,
            "snippet": self.snippet,
            "line_start": self.line_start,
            "line_end": self.line_end,
            "chunks": self.matching_chunks,
            "location": self.location,
            "chat": self.chat,
            "source_deleted": self.source_deleted,
            "resume": self.resume,
        }
        if self.chunk_id is not None:
            out["chunk_id"] = self.chunk_id
            out["heading"] = self.heading
        if self.text is not None:
            out["text"] = self.text
        return out


@dataclass
class LayerRun:
    "What one layer of the cascade ran and found."

    layer: int
    name: str
    match: str  # the FTS5 MATCH expression
    mode: str  # "all" terms or "any" term
    sql: str
    found: int
    new: int
    ms: float = 0.0  # time the layer's SQL took, milliseconds


@dataclass
class SearchResult:
    query: str
    terms: list[str]
    granularity: str
    found: int
    hits: list[Hit]
    layers: list[LayerRun]
    filters: dict[str, Any]
    truncated_by_budget: bool = False
    notes: list[str] = field(default_factory=list)
    found_is_total: bool = True  # False: the cascade stopped early; more may match
    semantic: dict[str, Any] | None = None  # the meaning pass: used, model, ms, found, reason
    # a query of dates alone: the period listed (words, since, until, order) and its themes,
    # [{"term", "count", "kind"}] (query/themes.py)
    period: dict[str, Any] | None = None
    themes: list[dict[str, Any]] = field(default_factory=list)
    documents_found: int | None = None  # documents matched (at chunk granularity, found counts chunks)
    # "Patterns noticed": what two or more of the shown results share, as ``themes`` are
    # counted (query/themes.py), with how many documents were shown
    patterns: list[dict[str, Any]] = field(default_factory=list)
    # words of the best-matching messages that counted too in ranking conversation passages
    # (passages/feedback.py); empty when none did
    related_words: list[str] = field(default_factory=list)
    # what a chunk search's budget passed over, best first (query/results.left_out): id, title,
    # key, messages not shown, estimated_tokens; empty when everything found fit
    left_out: list[dict[str, Any]] = field(default_factory=list)
    # words of the query no document holds, with the nearest indexed words (query/suggest.py):
    # words, suggested_query, searched_instead, why; None when every word is indexed
    typos: dict[str, Any] | None = None
    # the text searched: the query, or the query with its typos' suggestions in their place
    # when those were searched instead (``typos.searched_instead``)
    searched_query: str | None = None

    @property
    def total_tokens(self) -> int:
        return sum(h.est_tokens for h in self.hits)

    @property
    def searched(self) -> str:
        "What was searched: the query, or the words searched instead of its typos."
        return self.query if self.searched_query is None else self.searched_query

    def to_dict(self) -> dict[str, Any]:
        return {
            "query": self.query,
            "searched_query": self.searched,
            "terms": self.terms,
            "granularity": self.granularity,
            "found": self.found,
            "documents_found": self.found if self.documents_found is None else self.documents_found,
            "found_is_total": self.found_is_total,
            "showing": len(self.hits),
            "total_tokens": self.total_tokens,
            "truncated_by_budget": self.truncated_by_budget,
            "filters": self.filters,
            "semantic": self.semantic,
            "period": self.period,
            "themes": self.themes,
            "patterns_noticed": self.patterns,
            "related_words": self.related_words,
            "left_out": self.left_out,
            "typos": self.typos,
            "layers": [
                {
                    "layer": r.layer,
                    "name": r.name,
                    "mode": r.mode,
                    "match": r.match,
                    "found": r.found,
                    "new": r.new,
                    "ms": r.ms,
                }
                for r in self.layers
            ],
            "notes": self.notes,
            "results": [h.to_dict() for h in self.hits],
        }
