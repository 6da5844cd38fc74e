"""memdex for agents over MCP: search_knowledge_base, get_document and index_status.

Built on the official ``mcp`` SDK (``MCPServer``), over stdio or streamable HTTP on
loopback. Each tool is a thin call into the library (``dispatch``, ``documents``,
``status``) on a read-only connection of its own. The server's instructions are written
from the live index: what is in it, how much, of which kinds.

search_knowledge_base takes the spec's ``output_file``, ``retrieve_artifacts`` and
``retrieval_dir``, which write files. A client that runs a tool without asking (what
``memdex setup`` and the plugin configure for the search) must not get those: with
``save_tool`` (``memdex mcp --save-tool``) search_knowledge_base writes nothing and a fourth
tool, save_results, takes the same arguments and writes; the agent asks before it runs it.

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
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations
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
from memdex.query.engine import Engine
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
    from memdex.query.documents import DocumentNotFound

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
    ``guard`` (memdex serve's gate), and writing no files unless ``files``; with
    ``save_tool``, only save_results writes them."""

    def __init__(
        self,
        db_path: Path,
        guard: Guard = nullcontext,
        files: bool = True,
        engine: Engine | None = None,
        save_tool: bool = False,
    ) -> None:
        self.db_path = db_path
        self.guard = guard
        self.files = files
        self.engine = engine  # what the session keeps warm between its searches (query.engine)
        self.save_tool = save_tool

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

    def search_knowledge_base(self, query: str, **arguments: Any) -> CallToolResult:
        """Search memories, notes and chat archives with memdex's four-layer cascade (topics,
        topics+synonyms, content, content+synonyms), or answer a question with citations.

        Each result has the spec's SearchResult fields (chat_id, title, platform, date,
        message_count, chunk_count, total_size_bytes, estimated_tokens, has_*, matching_chunks,
        condensed_path, match_layer, relevance_score, why_relevant) and memdex's own: id, path,
        location (lines or messages to read), why (structured), chunks, date_source (where its
        date came from), resume (an agent session's way back in). A query of dates alone
        ("October", "May 2026", "last week", "yesterday", "20 days ago", "since Monday") lists
        what is dated then, newest first, with `themes`: the tags, topics, namespaces and
        platforms of that time. Every list has `patterns_noticed`: what two or more of its
        results share. A word no document holds gets a "did you mean" note and `typos` (the
        nearest indexed words, searched instead with fix_typos, or when nothing matched;
        `searched_query` says what was searched). An answer has the spec's AnswerWithSources
        fields, its details grouped by `category`, an `analysis`, and `verify` (the primary
        path and the related ones). Read a result with get_document(id, line_start, line_end)."""
        if self.save_tool and any(name in arguments for name in _FILES):
            return error("invalid_parameter", NO_FILES_HERE)
        return self._search(query, arguments)

    def save_results(self, query: str, **arguments: Any) -> CallToolResult:
        """Search (or answer) as search_knowledge_base does, with the same arguments, and write
        the output as a markdown file (output_file, by default a new timestamped file in the
        results folder beside the index), and with retrieve_artifacts copy the files behind
        the results into a folder. It never writes inside the indexed roots, over a file memdex
        did not write, or into an agent's folders (.claude/, .codex/, .gemini/, .github/,
        AGENTS.md, CLAUDE.md...). Returns what search_knowledge_base returns, with the paths
        written (output_file, retrieved)."""
        arguments = {"output_file": True, **arguments}
        if not (arguments["output_file"] or arguments.get("retrieve_artifacts")):
            return error(
                "invalid_parameter",
                "save_results writes a results file (output_file) or the sources "
                "(retrieve_artifacts): give one; to only search, call search_knowledge_base.",
            )
        return self._search(query, arguments)

    def _search(self, query: str, arguments: dict[str, Any]) -> CallToolResult:
        arguments = {**_defaults(), **arguments}  # called from Python, as over MCP
        output_file = arguments.pop("output_file")
        retrieve_artifacts = arguments.pop("retrieve_artifacts")
        retrieval_dir = arguments.pop("retrieval_dir")

        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            from memdex.doors.dispatch import deliver, run
            from memdex.query.options import parse

            if not self.files and (output_file or retrieve_artifacts):
                raise InvalidParameter(
                    "this server writes no files (memdex serve over HTTP is read-only): leave out "
                    "output_file and retrieve_artifacts."
                )
            asked = parse(query, arguments)
            outcome = run(conn, asked.request, engine=self.engine, **asked.answer)
            deliver(
                conn,
                outcome,
                output_file=output_file,
                retrieve_dir=(retrieval_dir or True) if retrieve_artifacts else None,
                max_tokens=asked.request.max_tokens,
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
                "path:12-30 reads those lines), its location (path (messages 3-7): those messages; "
                "path#key, one conversation of an export that holds many), or its key (chat_id)."
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
            from memdex.query.documents import get_document

            return get_document(conn, ref, line_start=line_start, line_end=line_end, max_tokens=max_tokens)

        return self._run(work)

    def index_status(self) -> CallToolResult:
        """What the index holds (documents, chunks, kinds, roots, tokens), whether a watcher
        keeps it current, and the files that could not be indexed."""

        def work(conn: sqlite3.Connection) -> dict[str, Any]:
            from memdex.doors.status import status

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
        from memdex.doors.status import status

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
        if e["type"] == "extra_forbidden" and where in _FILES and name == "search_knowledge_base":
            parts.append(NO_FILES_HERE)
        elif e["type"] == "extra_forbidden":
            known = ", ".join(tool.parameters.get("properties", {}))
            parts.append(f"unknown parameter {where!r} (the parameters of {name} are: {known})")
        else:
            parts.append(f"{where}: {e['msg']}")
    return "; ".join(parts)


# The spec's arguments of search_knowledge_base come first, in its order; then the other
# search options of the table (query.options), in its order.
SPEC_ORDER = ("query", "mode", "use_synonyms", "max_results", "granularity", "max_tokens", "output_file",
              "retrieve_artifacts", "retrieval_dir")  # fmt: skip
_FILES: dict[str, tuple[Any, Any]] = {  # what a query can write: MCP's own arguments, not search options
    "output_file": (
        bool | str | None,
        Field(
            description="Also write the output as markdown: true, a new timestamped file in the "
            "results folder beside the index; or a folder (a new timestamped file in it), or a "
            ".md file that does not exist yet or that memdex wrote."
        ),
    ),
    "retrieve_artifacts": (
        bool,
        Field(
            description="Copy the files behind the results into retrieval_dir (default: a new "
            "timestamped folder under retrieved/ beside the index)."
        ),
    ),
    "retrieval_dir": (
        str | None,
        Field(description="Folder for retrieve_artifacts, outside the indexed roots."),
    ),
}
_FILE_DEFAULTS = {"output_file": False, "retrieve_artifacts": False, "retrieval_dir": None}
NO_FILES_HERE = (
    "search_knowledge_base writes no files on this server: call save_results with the same "
    "arguments and output_file, retrieve_artifacts or retrieval_dir (your agent asks the user "
    "before it writes)."
)


@cache
def search_signature(files: bool = True, save: bool = False) -> inspect.Signature:
    """search_knowledge_base's arguments: the query, every search option of the table, the files
    (made once: every call fills its defaults from it). Without ``files``, no file arguments;
    with ``save``, save_results' (the same, output_file true by default)."""
    from memdex.answer.claude import DEFAULT_MODEL
    from memdex.query.options import OPTIONS

    query = Field(
        description="Keywords, or a question in plain words; dates alone ('October', 'last week') "
        "list what is dated then."
    )
    found: dict[str, inspect.Parameter] = {
        "query": inspect.Parameter("query", inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[str, query])
    }
    for o in OPTIONS:
        base: Any = list[str] if o.kind is list else o.kind
        if o.choices:
            base = Literal[(*o.choices, *o.unlisted)]
        if o.nullable:
            base = base | None
        bounds: dict[str, Any] = {}
        if o.low is not None:
            bounds["gt" if o.low_open else "ge"] = o.low
        if (o.mcp_high or o.high) is not None:
            bounds["le"] = o.mcp_high or o.high
        field = Field(description=o.help.format(default_model=DEFAULT_MODEL), **bounds)
        default = list(o.default) if o.kind is list else o.default_for_mcp
        found[o.mcp_name] = inspect.Parameter(
            o.mcp_name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=Annotated[base, field]
        )
    for name, (kind, field) in _FILES.items() if files or save else ():
        found[name] = inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=True if save and name == "output_file" else _FILE_DEFAULTS[name],
            annotation=Annotated[kind, field],
        )
    order = [n for n in SPEC_ORDER if n in found] + [n for n in found if n not in SPEC_ORDER]
    return inspect.Signature([found[n] for n in order], return_annotation=CallToolResult)


def tool_parameters(name: str, save_tool: bool = False) -> list[str]:
    "The arguments a tool takes, in order (search_knowledge_base's from the option table)."
    if name == "search_knowledge_base":
        return list(search_signature(files=not save_tool).parameters)
    if name == "save_results":
        return list(search_signature(save=True).parameters)
    return [p for p in inspect.signature(getattr(Tools, name)).parameters if p != "self"]


def tool_names(save_tool: bool = False, files: bool = True) -> list[str]:
    "The tools a server offers: save_results only with ``save_tool`` (and files at all)."
    writing = ["save_results"] if save_tool and files else []
    return ["search_knowledge_base", "get_document", "index_status", *writing]


def writes_files(name: str, save_tool: bool = False) -> bool:
    "Whether a tool can write a file: save_results, and search_knowledge_base without ``save_tool``."
    return bool(set(tool_parameters(name, save_tool)) & set(_FILES))


def _defaults() -> dict[str, Any]:
    "Each argument of search_knowledge_base (but the query) with its default."
    signature = search_signature()
    return {n: p.default for n, p in signature.parameters.items() if p.default is not inspect.Parameter.empty}


def build(
    db_path: Path,
    guard: Guard = nullcontext,
    files: bool = True,
    engine: Engine | None = None,
    save_tool: bool = False,
) -> MCPServer:
    """The MCP server for the index at ``db_path`` (``guard``, ``files``, ``engine`` and
    ``save_tool``: see Tools)."""
    impl = Tools(db_path, guard, files, engine, save_tool)

    def search_knowledge_base(query: str, **arguments: Any) -> CallToolResult:
        return impl.search_knowledge_base(query, **arguments)

    def save_results(query: str, **arguments: Any) -> CallToolResult:
        return impl.save_results(query, **arguments)

    search_knowledge_base.__doc__ = Tools.search_knowledge_base.__doc__
    search_knowledge_base.__signature__ = search_signature(files=not save_tool)  # type: ignore[attr-defined]
    save_results.__doc__ = Tools.save_results.__doc__
    save_results.__signature__ = search_signature(save=True)  # type: ignore[attr-defined]
    functions: dict[str, Callable[..., Any]] = {
        "search_knowledge_base": search_knowledge_base,
        "get_document": impl.get_document,
        "index_status": impl.index_status,
        "save_results": save_results,
    }
    tools = [  # descriptions dedented: a client shows them as they come
        _strict(
            Tool.from_function(
                functions[name],
                description=inspect.cleandoc(functions[name].__doc__ or ""),
                structured_output=False,
                annotations=_annotations(name, save_tool),
            )
        )
        for name in tool_names(save_tool, files)
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


def _annotations(name: str, save_tool: bool) -> ToolAnnotations:
    "What a client may read of a tool: whether it writes (and never over what it did not write)."
    if writes_files(name, save_tool):
        return ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=False)
    return ToolAnnotations(read_only_hint=True, open_world_hint=False)


def serve(
    db_path: Path, http: bool = False, host: str = "127.0.0.1", port: int = 8765, save_tool: bool = False
) -> None:
    "Run the server until stdin closes (stdio) or it is interrupted (HTTP)."
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="memdex mcp: %(message)s")
    with Engine(stays=True) as engine:  # an agent's session searches again and again
        _run(build(db_path, engine=engine, save_tool=save_tool), http, host, port)


def _run(server: MCPServer, http: bool, host: str, port: int) -> None:
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
