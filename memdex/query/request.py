"""What a search asks for: one ``SearchRequest``, carried from every door to the cascade.

The command line, batch lines, the MCP tool, ``memdex serve``, Datasette and answer mode each
build one request and hand it on, as llm's ``Prompt`` carries a request to its model; nobody
relays the options one by one. ``query.options`` is the table of every option by the names
the doors use, and makes the request from them.
"""

from __future__ import annotations

import calendar
import json
import re
from dataclasses import dataclass, field, replace
from typing import Any

from memdex.errors import InvalidParameter, QuerySyntaxError
from memdex.query.period import narrow

GRANULARITIES = ("chat", "chunk")  # "chat": one result per document (a chat, a memory, a note)
GRANULARITY_ALIASES = {"doc": "chat"}  # memdex's old name, kept
MAX_RAW_CHARS = 2000
MAX_LIMIT = 10_000  # more results than anyone reads; far larger ones overflowed SQLite's integers
_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2}([T ][0-9:.]+Z?)?)?)?$")


@dataclass
class Filters:
    "Restrict a search. Empty fields do not filter."

    kinds: list[str] = field(default_factory=list)
    namespace: str | None = None
    type: str | None = None
    scope: str | None = None
    platform: str | None = None
    tags: list[str] = field(default_factory=list)
    since: str | None = None
    until: str | None = None
    project: str | None = None  # agent sessions: the working folder, its path or last part(s)
    branch: str | None = None  # agent sessions: the git branch

    def check(self) -> None:
        for name in ("since", "until"):
            value = getattr(self, name)
            if value is None:
                continue
            if not _DATE.match(value):
                raise InvalidParameter(f"--{name} {value!r} is not a date: use YYYY, YYYY-MM or YYYY-MM-DD.")
            problem = _not_in_calendar(value)
            if problem:
                raise InvalidParameter(f"--{name} {value!r} is not a real date: {problem}.")

    def params(
        self,
        years: list[str] | None = None,
        months: list[int] | None = None,
        window: tuple[str | None, str | None] = (None, None),
    ) -> dict[str, Any]:
        """The named parameters of ``schema/queries/document_filter.sql``: these filters, and
        the query's own dates -- month and year words, and the window of days its relative
        dates leave (``ParsedQuery.window``), which narrows --since and --until."""
        self.check()
        return narrow(self._params(years, months), *window)

    def _params(self, years: list[str] | None, months: list[int] | None) -> dict[str, Any]:
        return {
            "kinds": json.dumps(self.kinds) if self.kinds else None,
            "namespace": self.namespace,
            "type": self.type,
            "scope": self.scope,
            "platform": self.platform,
            "project": self.project,
            "branch": self.branch,
            "tags": json.dumps(self.tags) if self.tags else None,
            "since": self.since,
            "until": self.until,
            "years": json.dumps(years) if years else None,
            "months": json.dumps(months) if months else None,
        }

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v not in (None, [])}


@dataclass(frozen=True)
class SearchRequest:
    """One search: the text and every option that shapes its results.

    :param granularity: ``chat`` (one hit per document; ``doc`` is an alias) or ``chunk`` (one
        per matching chunk)
    :param max_tokens: stop adding hits before their estimated tokens would pass this budget
    :param raw: treat ``query`` as an FTS5 expression (layers 1 and 3 only, no synonyms)
    :param full_text: include each hit's text (the chunk, or the whole document)
    :param semantic: search by meaning too: True, False, or None for "when the index has
        vectors" (the ``semantic`` extra and ``memdex embed``)
    :param patterns: say what the shown results have in common ("Patterns noticed": the tags,
        topics, namespaces and platforms two or more of them share); one more query, ~1 ms
    :param fix_typos: search the nearest indexed words in place of words no document holds
        (without it they are only suggested, "did you mean", unless nothing matched at all)
    """

    query: str
    limit: int = 10
    granularity: str = "chat"
    max_tokens: int | None = None
    use_synonyms: bool = True
    raw: bool = False
    filters: Filters = field(default_factory=Filters)
    full_text: bool = False
    semantic: bool | None = None
    patterns: bool = True
    fix_typos: bool = False

    def __post_init__(self) -> None:
        alias = GRANULARITY_ALIASES.get(self.granularity)
        if alias:
            object.__setattr__(self, "granularity", alias)

    def check(self) -> None:
        "Raise InvalidParameter (or QuerySyntaxError) naming the option that cannot be used."
        if self.raw and len(self.query) > MAX_RAW_CHARS:
            raise QuerySyntaxError(
                f"A raw FTS5 query may be at most {MAX_RAW_CHARS:,} characters "
                f"(this one is {len(self.query):,}); FTS5's cost grows with its square. "
                "Shorten it, or drop --raw."
            )
        if self.granularity not in GRANULARITIES:
            raise InvalidParameter(f"granularity must be chat (or doc) or chunk, not {self.granularity!r}.")
        if not 1 <= self.limit <= MAX_LIMIT:
            raise InvalidParameter(f"limit must be from 1 to {MAX_LIMIT:,}, not {self.limit}.")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise InvalidParameter(f"max_tokens must be 1 or more, not {self.max_tokens}.")
        self.filters.check()

    def with_changes(self, **changes: Any) -> SearchRequest:
        "The same request with some fields changed (another query, another limit...)."
        return replace(self, **changes)


def _not_in_calendar(value: str) -> str:
    "What makes a date of the right shape impossible (month 13, 30 February), or ''."
    year, month, day = int(value[:4]), int(value[5:7] or 1), int(value[8:10] or 1)
    if not year:
        return "there is no year 0"
    if not 1 <= month <= 12:
        return f"there is no month {month}"
    days = calendar.monthrange(year, month)[1]
    if not 1 <= day <= days:
        return f"{calendar.month_name[month]} {year} has {days} days"
    return ""


def as_request(request: SearchRequest | str, options: dict[str, Any]) -> SearchRequest:
    "A request as given, or built from query text and the request's fields as keywords."
    if options.get("filters", True) is None:  # filters=None: no filters, as search() always took
        options = {k: v for k, v in options.items() if k != "filters"}
    if isinstance(request, str):
        return SearchRequest(request, **options)
    return request.with_changes(**options) if options else request
