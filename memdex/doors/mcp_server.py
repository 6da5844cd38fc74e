"""memdex for agents over MCP: search_knowledge_base, get_document and index_status.

Built on the official ``mcp`` SDK (``MCPServer``), over stdio or streamable HTTP on
loopback. Each tool is a thin call into the library (``dispatch``, ``documents``,
``status``) on a read-only connection of its own. The server's instructions are written
from the live index: what is in it, how much, of which kinds.

Every failure has one shape, an ``isError`` result whose text is JSON::

    {"error": {"type": "invalid_parameter", "message": "...", "retry": "..."}}

``type`` is one of ERRORS below and ``retry`` says what to do about it. Parameters are
checked before a tool runs: an unknown name, or a value of the wrong type or range, is an
``invalid_parameter`` error naming it -- never silently ignored.
"""

from __future__ import annotations

import inspect
import json
import logging
import sqlite3
import sys
from collections.abc import Callable
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent
from pydantic import ConfigDict, Field, ValidationError

from memdex import __version__
from memdex.errors import (
    DatabaseError,
    IndexNotFound,
    InvalidParameter,
    MemdexError,
    SchemaError,
    raise_errors,
)
from memdex.store import db

log = logging.getLogger("memdex.mcp")
Guard = Callable[[], AbstractContextManager[None]]

ERRORS = {
    "invalid_parameter": "Correct the parameter named in the message and call again.",
    "not_found": "Search first (search_knowledge_base) and pass an id or path from its results.",
    "index_not_found": "Index some files first: run `memdex index PATH` in a shell, then call again.",
    "database": "Try again in a few seconds; if it persists, run `memdex status` in a shell.",
    "failed": "Try again; if it fails the same way, the message says what to change.",
    "internal": "This is a bug in memdex: please report it. The other tools still work.",
}


def error(kind: str, message: str) -> CallToolResult:
    body = {"error": {"type": kind, "message": message, "retry": ERRORS[kind]}}
    return CallToolResult(content=[TextContent(type="text", text=json.dumps(body))], is_error=True)


def ok(data: dict[str, Any]) -> CallToolResult:
    text = json.dumps(data, ensure_ascii=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=json.loads(text))


def error_type(exc: MemdexError | sqlite3.OperationalError) -> str:
    "Which of ERRORS an expected failure is (memdex serve's JSON errors use the same types)."
    from memdex.store.documents import DocumentNotFound

    if isinstance(exc, DocumentNotFound):
        return "not_found"
    if isinstance(exc, InvalidParameter):
        return "invalid_parameter"
    if isinstance(exc, IndexNotFound | SchemaError):
        return "index_not_found"
    if isinstance(exc, DatabaseError | sqlite3.OperationalError):
        return "database"
    return "failed"


def _failure(exc: MemdexError | sqlite3.OperationalError) -> CallToolResult:
    "An expected failure in the documented shape, its type saying what to do about it."
    return error(error_type(exc), str(exc))


class Tools:
    """The tools, each on a fresh read-only connection to one index; each call inside
    ``guard`` (memdex serve's gate), and writing no files unless ``files``."""

    def __init__(self, db_path: Path, guard: Guard = nullcontext, files: bool = True) -> None:
        self.db_path = db_path
        self.guard = guard
        self.files = files

    def _run(self, work: Callable[[sqlite3.Connection], dict[str, Any]]) -> CallToolResult:
        try:
            with self.guard():
                conn = db.connect(self.db_path, create=False, readonly=True, upgrade=True)
                try:
                    return ok(work(conn))
                finally:
                    conn.close()
        except (MemdexError, sqlite3.OperationalError) as exc:
            return _failure(exc)
        except Exception as exc:  # the dispatcher's boundary: a bug is an "internal" error...
            if raise_errors():  # ...except under test (MEMDEX_RAISE_ERRORS), where it must show
                raise  # the SDK answers "Error executing tool <name>" and logs the traceback
            log.exception("tool failed")
            return error("internal", f"{type(exc).__name__}: {exc}")

    def search_knowledge_base(
        self,
        query: Annotated[
            str,
            Field(
                description="Keywords, or a question in plain words; dates alone "
                "('October', 'last week') list what is dated then."
            ),
        ],
        mode: Annotated[
            Literal["auto", "search", "answer"],
            Field(description="search: ranked results; answer: a cited answer; auto: from the wording."),
        ] = "auto",
        use_synonyms: Annotated[
            bool, Field(description="Also match synonyms (cascade layers 2 and 4).")
        ] = True,
        max_results: Annotated[int, Field(ge=1, le=100, description="Most results (or sources).")] = 10,
        granularity: Annotated[
            Literal["chat", "doc", "chunk"],
            Field(description="One result per chat or document (doc is the same), or per matching chunk."),
        ] = "chat",
        max_tokens: Annotated[
            int | None,
            Field(ge=1, description="Token budget: of results, or of source text for an answer."),
        ] = None,
        output_file: Annotated[
            bool | str | None,
            Field(
                description="Also write the output as markdown: true, a new timestamped file in the "
                "results folder beside the index; or a folder (a new timestamped file in it), or a "
                ".md file that does not exist yet or that memdex wrote."
            ),
        ] = False,
        retrieve_artifacts: Annotated[
            bool,
            Field(
                description="Copy the files behind the results into retrieval_dir (default: a new "
                "timestamped folder under retrieved/ beside the index)."
            ),
        ] = False,
        retrieval_dir: Annotated[
            str | None,
            Field(description="Folder for retrieve_artifacts, outside the indexed roots."),
        ] = None,
        semantic: Annotated[
            bool | None,
            Field(description="Search by meaning too; default: when the index has vectors (memdex embed)."),
        ] = None,
        platform: Annotated[
            str | None,
            Field(description="Only chats from this platform: chatgpt, claude, gemini, claude-code, codex."),
        ] = None,
        project: Annotated[
            str | None,
            Field(
                description="Only agent sessions run in this folder: its path, or its last part(s), "
                "e.g. memdex."
            ),
        ] = None,
        branch: Annotated[str | None, Field(description="Only agent sessions on this git branch.")] = None,
        namespace: Annotated[
            str | None, Field(description="Only this namespace (and those under it), e.g. decisions.")
        ] = None,
        since: Annotated[
            str | None, Field(description="Only documents dated on or after YYYY[-MM[-DD]].")
        ] = None,
        until: Annotated[
            str | None, Field(description="Only documents dated on or before YYYY[-MM[-DD]].")
        ] = None,
        min_relevance: Annotated[
            float | None,
            Field(
                ge=0,
                le=1,
                description="Answer mode: send only sources this relevant, unless none is "
                "(default 0.5; 0 sends every source that fits the budget).",
            ),
        ] = None,
        fix_typos: Annotated[
            bool,
            Field(
                description="Search the nearest indexed words in place of words no document holds "
                "(else they are only suggested in notes and typos, unless nothing matched)."
            ),
        ] = False,
    ) -> CallToolResult:
        """Search memories, notes and chat archives with memdex's four-layer cascade (topics,
        topics+synonyms, content, content+synonyms), or answer a question with citations.

        Each result has the spec's SearchResult fields (chat_id, title, platform, date,
        message_count, chunk_count, total_size_bytes, estimated_tokens, has_*, matching_chunks,
        condensed_path, match_layer, relevance_score, why_relevant) and memdex's own: id, path,
        location (lines or messages to read), why (structured), chunks, date_source (where its
        date came from). A query of dates alone ("October", "May 2026", "last week",
        "yesterday", "20 days ago", "since Monday") lists what is dated then, newest first,
        with `themes`: the tags, topics, namespaces and platforms of that time. Every list has
        `patterns_noticed`: what two or more of its results share. A word no document holds
        gets a "did you mean" note and `typos` (the nearest indexed words, searched instead with
        fix_typos, or when nothing matched). An answer has the spec's
        AnswerWithSources fields, its details grouped by `category`, an `analysis`, and
        `verify` (the primary path and the related ones). Read a result with
        get_document(id, line_start, line_end)."""

        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            from memdex.doors.dispatch import deliver, run
            from memdex.query.request import Filters, SearchRequest

            if not self.files and (output_file or retrieve_artifacts):
                raise InvalidParameter(
                    "this server writes no files (memdex serve over HTTP is read-only): leave out "
                    "output_file and retrieve_artifacts."
                )
            filters = Filters(
                platform=platform,
                project=project,
                branch=branch,
                namespace=namespace,
                since=since,
                until=until,
            )
            request = SearchRequest(
                query,
                limit=max_results,
                granularity=granularity,
                max_tokens=max_tokens,
                use_synonyms=use_synonyms,
                filters=filters,
                semantic=semantic,
                fix_typos=fix_typos,
            )
            outcome = run(conn, request, mode=mode, min_relevance=min_relevance)
            deliver(
                conn,
                outcome,
                output_file=output_file,
                retrieve_dir=(retrieval_dir or True) if retrieve_artifacts else None,
                max_tokens=max_tokens,
            )
            return outcome.to_dict()

        return self._run(work)

    def get_document(
        self,
        id: Annotated[int | None, Field(ge=1, description="A document id from search results.")] = None,
        path: Annotated[
            str | None,
            Field(
                description="Or what a result printed to name it: its path (absolute or relative; "
                "path:12-30 reads those lines), its location (path (messages 3-7): those messages), "
                "or its key (chat_id)."
            ),
        ] = None,
        line_start: Annotated[int | None, Field(ge=1, description="First line to read (1-based).")] = None,
        line_end: Annotated[int | None, Field(ge=1, description="Last line to read (inclusive).")] = None,
        max_tokens: Annotated[
            int | None, Field(ge=1, description="Stop at a line before this many tokens.")
        ] = None,
    ) -> CallToolResult:
        """Read a document found by search_knowledge_base, whole or some of its lines, under a
        token budget. Name it by id, or by path with any form a result prints (path,
        path:lines, location, key). Markdown is read from its file (the file's own line
        numbers); a conversation from the index. next_line says where to continue."""
        if (id is None) == (path is None):
            return error("invalid_parameter", "give exactly one of id or path.")
        ref: int | str = id if id is not None else str(path)

        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            from memdex.store.documents import get_document

            return get_document(conn, ref, line_start=line_start, line_end=line_end, max_tokens=max_tokens)

        return self._run(work)

    def index_status(self) -> CallToolResult:
        """What the index holds (documents, chunks, kinds, roots, tokens), whether a watcher
        keeps it current, and the files that could not be indexed."""

        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            from memdex.store.status import status

            return status(conn, self.db_path)

        return self._run(work)


def instructions(db_path: Path) -> str:
    "The server's instructions, from what the index holds now."
    use = (
        "Call search_knowledge_base(query) to find what the user or earlier agents remembered: "
        "mode 'search' lists ranked results with sizes, tokens and the layer that found each; "
        "'answer' returns a cited answer; 'auto' picks by the wording. Then read a result with "
        "get_document(id, line_start, line_end). index_status says what is indexed and how fresh."
    )
    try:
        conn = db.connect(db_path, create=False, readonly=True, upgrade=True)
    except MemdexError as exc:
        return f"memdex has no usable index at {db_path} yet ({exc}). {use}"
    try:
        from memdex.store.status import status

        info = status(conn, db_path)
    finally:
        conn.close()
    c = info["counts"]
    kinds = ", ".join(f"{k['documents']:,} {k['kind']}" for k in info["kinds"]) or "nothing yet"
    roots = ", ".join(r["path"] for r in info["roots"][:5]) + (" …" if len(info["roots"]) > 5 else "")
    watcher = "kept current by a running watcher" if info["writer"]["running"] else "no watcher running"
    return (
        f"memdex: full-text search over {c['documents']:,} documents ({kinds}; "
        f"~{c['est_tokens']:,} tokens) from {roots or 'no roots'}; {watcher}. {use}"
    )


def _strict(tool: Tool) -> Tool:
    "The tool's argument model with unknown names forbidden, in its schema too."
    base = tool.fn_metadata.arg_model
    config = {"model_config": ConfigDict(extra="forbid"), "__module__": __name__}
    strict: Any = type(base.__name__, (base,), config)
    tool.fn_metadata.arg_model = strict
    tool.parameters = strict.model_json_schema(by_alias=True)
    return tool


def _check_arguments(tools: dict[str, Tool]) -> Any:
    "Middleware: bad arguments become the documented error before the SDK sees them."

    async def check(ctx: Any, call_next: Any) -> Any:
        if ctx.method == "tools/call" and isinstance(ctx.params, dict):
            name = ctx.params.get("name")
            arguments = ctx.params.get("arguments") or {}
            tool = tools.get(name) if isinstance(name, str) else None
            if tool is None or not isinstance(name, str):
                return error("invalid_parameter", f"no tool {name!r}; the tools are: {', '.join(tools)}.")
            if not isinstance(arguments, dict):
                return error("invalid_parameter", "arguments must be an object.")
            try:
                tool.fn_metadata.arg_model.model_validate(arguments)
            except ValidationError as exc:
                return error("invalid_parameter", _validation_message(name, exc, tool))
        return await call_next(ctx)

    return check


def _validation_message(name: str, exc: ValidationError, tool: Tool) -> str:
    parts = []
    for e in exc.errors():
        where = ".".join(str(x) for x in e["loc"]) or "arguments"
        if e["type"] == "extra_forbidden":
            known = ", ".join(tool.parameters.get("properties", {}))
            parts.append(f"unknown parameter {where!r} (the parameters of {name} are: {known})")
        else:
            parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


def build(db_path: Path, guard: Guard = nullcontext, files: bool = True) -> MCPServer:
    "The MCP server for the index at ``db_path`` (``guard`` and ``files``: see Tools)."
    impl = Tools(db_path, guard, files)
    functions = (impl.search_knowledge_base, impl.get_document, impl.index_status)
    tools = [  # descriptions dedented: a client shows them as they come
        _strict(
            Tool.from_function(fn, description=inspect.cleandoc(fn.__doc__ or ""), structured_output=False)
        )
        for fn in functions
    ]
    registry = {t.name: t for t in tools}
    return MCPServer(
        "memdex",
        instructions=instructions(db_path),
        version=__version__,
        tools=tools,
        middleware=[_check_arguments(registry)],
        log_level="WARNING",
    )


def serve(db_path: Path, http: bool = False, host: str = "127.0.0.1", port: int = 8765) -> None:
    "Run the server until stdin closes (stdio) or it is interrupted (HTTP)."
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="memdex mcp: %(message)s")
    server = build(db_path)
    if not http:
        server.run("stdio")
        return
    from mcp.server.transport_security import TransportSecuritySettings

    names = [host, "127.0.0.1", "localhost"]
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[f"{h}:{port}" for h in dict.fromkeys(names)],
        allowed_origins=[f"http://{h}:{port}" for h in dict.fromkeys(names)],
    )
    server.run("streamable-http", host=host, port=port, transport_security=security)
