"""Many searches in one process: JSON lines in, JSON lines out (``memdex search --batch``).

Each input line is ``{"id": ..., "query": ..., <any search option>}``; each output line is
``{"id": ..., "query": ..., "found": N, "results": [...]}``, or ``{"id": ..., "error": ...}``
for a line that could not run. Agents and evaluations use it to avoid a process per query.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from memdex.errors import InvalidParameter, MemdexError
from memdex.query.cascade import Filters, search

# option name in a batch line -> (search() keyword or Filters field, type)
_SEARCH_OPTIONS = {
    "limit": int,
    "granularity": str,
    "max_tokens": int,
    "raw": bool,
    "full": bool,
    "synonyms": bool,
}
_FILTER_OPTIONS = {
    "namespace": str,
    "type": str,
    "scope": str,
    "platform": str,
    "since": str,
    "until": str,
    "tag": list,
    "tags": list,
    "kind": list,
    "kinds": list,
}


def options_from(line: dict[str, Any]) -> tuple[dict[str, Any], Filters]:
    "search() keywords and Filters from one batch line; unknown options are an error."
    kwargs: dict[str, Any] = {}
    filters = Filters()
    for name, value in line.items():
        if name in ("id", "query"):
            continue
        if name in _SEARCH_OPTIONS:
            expected = _SEARCH_OPTIONS[name]
            if not isinstance(value, expected) or (expected is int and isinstance(value, bool)):
                raise InvalidParameter(f"option {name!r} must be {expected.__name__}, not {value!r}")
            key = {"full": "full_text", "synonyms": "use_synonyms"}.get(name, name)
            kwargs[key] = value
        elif name in _FILTER_OPTIONS:
            if _FILTER_OPTIONS[name] is list:
                values = value if isinstance(value, list) else [value]
                field = "tags" if name.startswith("tag") else "kinds"
                getattr(filters, field).extend(str(v) for v in values)
            elif value is not None:
                setattr(filters, name, str(value))
        else:
            known = ", ".join(sorted([*_SEARCH_OPTIONS, *_FILTER_OPTIONS]))
            raise InvalidParameter(f"unknown option {name!r}; known options: id, query, {known}")
    return kwargs, filters


def run_batch(
    conn: sqlite3.Connection, lines: Iterable[bytes | str], defaults: dict[str, Any] | None = None
) -> Iterator[dict[str, Any]]:
    "Run each JSON line as a search; yield one output object per non-blank input line."
    for number, raw in enumerate(lines, 1):
        try:
            line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
        except UnicodeDecodeError as exc:
            yield {
                "id": None,
                "line": number,
                "error": f"line {number} is not valid UTF-8 (byte {exc.start})",
            }
            continue
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            yield {"id": None, "line": number, "error": f"line {number} is not JSON: {exc.msg}"}
            continue
        if not isinstance(item, dict) or not isinstance(item.get("query"), str):
            yield {"id": None, "line": number, "error": f'line {number} needs a "query" string'}
            continue
        try:
            kwargs, filters = options_from({**(defaults or {}), **item})
            result = search(conn, item["query"], filters=filters, **kwargs)
        except MemdexError as exc:
            yield {"id": item.get("id"), "error": str(exc)}
            continue
        out = result.to_dict()
        yield {"id": item.get("id"), "query": item["query"], "found": out["found"], "results": out["results"]}
