"""Many searches in one process: JSON lines in, JSON lines out (``memdex search --batch``).

Each input line is ``{"id": ..., "query": ..., <any search option>}`` (``query.options``: the
names ``memdex serve`` and MCP take too); each output line is
``{"id": ..., "query": ..., "found": N, "results": [...]}`` (with ``period`` and ``themes``
for a query of dates alone, such as "October"; with ``patterns_noticed`` when the line asks
``"patterns": true`` -- off by default here, where lines are read by programs; with ``typos``
when a word is in no document: the nearest indexed words, searched instead with
``"fix_typos": true`` or when nothing matched), or
``{"id": ..., "error": ...}`` for a line that could not run. Agents and evaluations use it to
avoid a process per query.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator
from typing import Any

from memdex.doors.dispatch import run
from memdex.errors import MemdexError
from memdex.query.engine import Engine, given_or_own
from memdex.query.options import parse


def run_batch(
    conn: sqlite3.Connection,
    lines: Iterable[bytes | str],
    defaults: dict[str, Any] | None = None,
    engine: Engine | None = None,
) -> Iterator[dict[str, Any]]:
    """Run each JSON line as a search; yield one output object per non-blank input line. The
    lines share one engine (``query.engine``): the given one, else one of the batch's own."""
    with given_or_own(engine) as engine:
        for number, raw in enumerate(lines, 1):
            reply = _reply(conn, number, raw, defaults, engine)
            if reply is not None:
                yield reply


def _reply(
    conn: sqlite3.Connection,
    number: int,
    raw: bytes | str,
    defaults: dict[str, Any] | None,
    engine: Engine,
) -> dict[str, Any] | None:
    "What one line gets back: its results, or an error naming the line; None for a blank line."
    try:
        line = raw.decode("utf-8") if isinstance(raw, bytes) else raw
    except UnicodeDecodeError as exc:
        return {"id": None, "line": number, "error": f"line {number} is not valid UTF-8 (byte {exc.start})"}
    if not line.strip():
        return None
    try:
        item = json.loads(line)
    except json.JSONDecodeError as exc:
        return {"id": None, "line": number, "error": f"line {number} is not JSON: {exc.msg}"}
    if not isinstance(item, dict) or not isinstance(item.get("query"), str):
        return {"id": None, "line": number, "error": f'line {number} needs a "query" string'}
    try:
        given = {"patterns": False, **(defaults or {}), **item}
        asked = parse(item["query"], {k: v for k, v in given.items() if k not in ("id", "query")})
        outcome = run(conn, asked.request, engine=engine, **asked.answer)
    except MemdexError as exc:
        return {"id": item.get("id"), "error": str(exc)}
    result, out = outcome.result, outcome.to_dict()
    reply: dict[str, Any] = {"id": item.get("id"), "query": item["query"], "found": out["found"]}
    reply["results"] = out["results"]
    if result.period is not None:  # a query of dates alone: the period listed, and its themes
        reply.update(period=out["period"], themes=out["themes"])
    if result.patterns:
        reply["patterns_noticed"] = out["patterns_noticed"]
    if result.typos:  # words no document holds: suggested, or searched instead ("fix_typos")
        reply.update(typos=out["typos"], searched_query=out["searched_query"])
    if outcome.answer is not None:  # "mode": "answer" (or "auto" and a question)
        reply["answer"] = out["answer"]
    return reply
