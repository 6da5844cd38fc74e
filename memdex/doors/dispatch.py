"""One query, whichever door it came in by: search or answer, then the files asked for.

Every door calls :func:`run` (the command line's ``memdex search`` and ``memdex ask``, a
``--batch`` line, the MCP tool, ``memdex serve``'s ``/search`` and :class:`memdex.Index`),
and those that write files :func:`deliver`, so a query behaves the same from each.
"""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memdex.answer import modes
from memdex.errors import InvalidParameter
from memdex.models import SearchResult
from memdex.query.engine import Engine, given_or_own
from memdex.query.request import SearchRequest, as_request
from memdex.query.search import search

if TYPE_CHECKING:  # answer mode's modules load only when a query asks for an answer
    from memdex.answer.answers import Answer
    from memdex.answer.claude import Settings
    from memdex.answer.refine import Refinement

RETRIEVE_ALL = 10**9  # search mode retrieves every result shown; its budget is --max-tokens


@dataclass
class Outcome:
    query: str
    mode: str  # search | answer
    result: SearchResult
    refinement: Refinement | None = None
    answer: Answer | None = None
    output_file: str | None = None
    retrieved: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"mode": self.mode, **self.result.to_dict()}
        out["refinement"] = self.refinement.to_dict() if self.refinement else None
        out["answer"] = self.answer.to_dict() if self.answer else None
        if self.output_file:
            out["output_file"] = self.output_file
        if self.retrieved is not None:
            out["retrieved"] = self.retrieved
        return out

    def text(self) -> str:
        from memdex.doors.render import answer_text, results_text

        return answer_text(self.answer) if self.answer else results_text(self.result)


def run(
    conn: sqlite3.Connection,
    request: SearchRequest | str,
    *,
    mode: str = "search",
    rounds: int | None = None,
    use_llm: bool = True,
    llm_refine: bool = False,
    min_relevance: float | None = None,
    model: str | None = None,
    timeout: float | None = None,
    settings: Settings | None = None,
    engine: Engine | None = None,
    **options: Any,
) -> Outcome:
    """Search or answer a request; ``mode`` is search, answer or auto (from the wording). The
    keywords are the answer options of ``query.options`` (``Asked.answer``).

    :param rounds: refinement rounds; default 3 in answer mode, 1 (no refinement) in search mode
    :param min_relevance: answer mode: the relevance a source needs to be sent (default 0.5)
    :param model, timeout: Claude's, for an answer (default: $MEMDEX_MODEL, 60 s); or ``settings``
    :param engine: the door's (``query.engine``): what it keeps between its searches; without
        one, this query's searches share one of their own
    """
    request = as_request(request, options)
    with given_or_own(engine) as engine:  # the query's searches (an answer's rounds) share it
        return _run(
            conn, request, engine, mode, rounds, use_llm, llm_refine, min_relevance, settings, model, timeout
        )


def _run(
    conn: sqlite3.Connection,
    request: SearchRequest,
    engine: Engine,
    mode: str,
    rounds: int | None,
    use_llm: bool,
    llm_refine: bool,
    min_relevance: float | None,
    settings: Settings | None,
    model: str | None,
    timeout: float | None,
) -> Outcome:
    query = request.query
    chosen = modes.resolve(mode, query)
    if chosen == "answer":
        from memdex.answer.claude import Settings
        from memdex.answer.synthesis import answer

        if request.raw:
            raise InvalidParameter("--raw is for search mode: an answer searches the question's own words.")
        result = answer(
            conn,
            request,
            rounds=rounds or 3,
            use_llm=use_llm,
            llm_refine=llm_refine,
            min_relevance=min_relevance,
            settings=settings or Settings.from_env(model=model, timeout=timeout),
            engine=engine,
        )
        if result.refinement is None:  # nothing to search for: an empty result says so
            empty = search(conn, request.with_changes(query="", max_tokens=None, full_text=False), engine)
            return Outcome(query, "answer", empty, None, result)
        return Outcome(query, "answer", result.refinement.result, result.refinement, result)
    if (rounds or 1) > 1 and not request.raw:
        from memdex.answer.refine import refine

        ref = refine(conn, request, max_rounds=rounds or 1, engine=engine)
        return Outcome(query, "search", ref.result, ref)
    return Outcome(query, "search", search(conn, request, engine))


def deliver(
    conn: sqlite3.Connection,
    outcome: Outcome,
    *,
    output_file: str | bool | None = None,
    retrieve_dir: str | bool | None = None,
    max_tokens: int | None = None,
) -> Outcome:
    """Write the results file and retrieve the sources, as asked; record both in the outcome.

    ``True`` for either means "where memdex keeps them": a new timestamped file or folder in
    ``results/`` or ``retrieved/`` beside the index (``outputs.default_folder``)."""
    if retrieve_dir is True:
        from memdex.doors.outputs import default_retrieval_dir

        retrieve_dir = default_retrieval_dir(conn, outcome.query)
    if output_file is True:
        from memdex.doors.outputs import default_folder

        output_file = str(default_folder(conn, "results")) + os.sep
    if isinstance(retrieve_dir, str) and retrieve_dir:
        from memdex.answer.sources import pack
        from memdex.doors.outputs import retrieve

        if outcome.answer is not None:
            sources = [s for s in outcome.answer.sources if s.cited]
        else:
            sources = pack(conn, outcome.result.hits, RETRIEVE_ALL)
        outcome.retrieved = retrieve(conn, sources, retrieve_dir, query=outcome.query, max_tokens=max_tokens)
    if isinstance(output_file, str) and output_file:
        from memdex.doors.outputs import write_results

        outcome.output_file = str(write_results(conn, output_file, outcome.query, outcome.text()))
    return outcome
