"""Across 100 questions of our own Serena query set, every citation of every answer names a
source that was sent: with Claude (the local Messages API server, which also slips in
citations of sources that do not exist) and without a key (extractive)."""

from __future__ import annotations

import copy
import itertools
import json
import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memdex.answer import synthesis
from memdex.answer.answers import Answer
from memdex.answer.claude import Settings
from memdex.answer.refine import Refinement
from memdex.answer.synthesis import answer

from . import messages_api as api
from .messages_api import KEY, serving
from .test_answer import ANY_CITATION

# Slow as a whole (see docs/development.md): the quick check leaves it out.
pytestmark = pytest.mark.slow

QUERIES = Path(__file__).resolve().parent.parent / "scripts" / "eval_data" / "serena-queries.jsonl"


def hundred_questions() -> list[str]:
    rows = [json.loads(line) for line in QUERIES.read_text().splitlines() if line.strip()]
    by_type = {t: [r["query"] for r in rows if r["type"] == t] for t in ("question", "paraphrase", "direct")}
    picked = by_type["question"] + by_type["paraphrase"] + by_type["direct"]
    assert len(picked) >= 100
    return picked[:100]


def cited(a: Answer) -> list[int]:
    "Listed citations, and every number in any bracket of the text (a broader net than memdex's)."
    listed = [c for d in a.details for c in d.citations]
    texts = [a.summary, *(d.text for d in a.details)]
    return listed + [int(n) for t in texts for c in ANY_CITATION.findall(t) for n in re.findall(r"\d+", c)]


def test_every_citation_of_100_answers_resolves(
    serena: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    questions = hundred_questions()
    bogus = itertools.cycle([(), (), (41, 7)])  # every third reply cites sources 41 and 7 as well

    def reply(body: dict[str, Any]) -> api.Reply:
        return api.answer(body, extra_citations=next(bogus))

    # A question's two answers (Claude's, then the extractive one) refine the same search: no
    # --llm-refine, so the same request, rounds and search text. The second gets a copy of the
    # first's rounds instead of running them again: they were most of this test's time, and
    # what the rounds found is the same either way (the refinement is deterministic).
    rounds: dict[str, Refinement] = {}
    real_refine = synthesis.refine

    def refine_once(conn: sqlite3.Connection, request: Any, **options: Any) -> Refinement:
        key = repr((request, sorted(options.items())))
        if key not in rounds:
            rounds[key] = real_refine(conn, request, **options)
        return copy.deepcopy(rounds[key])

    monkeypatch.setattr(synthesis, "refine", refine_once)
    totals = {"claude": 0, "extractive": 0, "dropped": 0}
    with serving() as server:
        server.script.extend([reply] * len(questions))
        settings = Settings(api_key=KEY, base_url=server.url)
        for q in questions:
            a = answer(serena, q, settings=settings)
            assert a.method == "claude", (q, a.reason)
            sent = {s.n for s in a.sources}
            assert a.sources and set(cited(a)) <= sent, q
            totals["claude"] += len(cited(a))
            totals["dropped"] += sum("Dropped citation" in c for c in a.caveats)
            a = answer(serena, q, use_llm=False)
            assert a.method == "extractive"
            assert a.sources and set(cited(a)) <= {s.n for s in a.sources}, q
            totals["extractive"] += len(cited(a))
    assert len(server.requests) == 100 and len(rounds) == 100
    assert totals["claude"] >= 300 and totals["extractive"] >= 300
    # a reply citing 41 and 7 loses 41 (ten sources at most are sent); 7 may be real
    assert totals["dropped"] >= 33
