"""memdex serve over HTTP: a JSON endpoint and MCP (streamable HTTP), read-only.

``GET /search?q=...`` takes every search option (``query.options``) by its name or its
command-line flag (``limit`` or ``n``, ``granularity``, ``max-tokens``, ``kind``, ``tag``
(repeat them), ``since``, ``no-synonyms``, ``semantic``, ``mode``...) and answers what
``memdex search --json`` prints, byte for byte;
``GET /show?ref=...`` what ``memdex show --json`` prints; ``GET /health`` says it is up.
``/mcp`` is ``memdex mcp``'s server, writing no files. Errors are MCP's shape,
``{"error": {"type", "message", "retry"}}``, with 400, 404 or 503; 500 only for a bug.

On loopback without a token, requests must name this machine as their Host (a web page
cannot reach the index through DNS rebinding); with a token every request must carry it
(``auth``).
"""

from __future__ import annotations

import logging
import socket
import sqlite3
import threading
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from memdex import __version__
from memdex.doors.serve.auth import authorized
from memdex.doors.serve.caller import Gate
from memdex.errors import InvalidParameter, MemdexError, raise_errors
from memdex.query.engine import Engine

log = logging.getLogger("memdex.doors.serve")

STATUS = {"invalid_parameter": 400, "not_found": 404, "index_not_found": 503, "database": 503, "failed": 400}
WRITES = ("output_file", "retrieve", "retrieve_dir", "retrieve_artifacts", "retrieval_dir", "batch")


@dataclass
class HttpSettings:
    host: str = "127.0.0.1"
    port: int = 8765
    token: str | None = None
    tls_cert: Path | None = None
    tls_key: Path | None = None

    @property
    def scheme(self) -> str:
        return "https" if self.tls_cert else "http"


class HttpServer:
    "uvicorn on a thread of its own, serving the JSON endpoint and MCP for one index."

    def __init__(self, db_path: Path, settings: HttpSettings) -> None:
        self.db_path = db_path
        self.settings = settings
        self.guard: Guard | None = None
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self, gate: Gate, engine: Engine, timeout: float = 30.0) -> str:
        "Listen (failing here if the address is taken) and serve; the address served."
        import uvicorn

        s = self.settings
        family = socket.AF_INET6 if ":" in s.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((s.host.strip("[]"), s.port))
            sock.listen(128)
        except OSError as exc:
            sock.close()
            raise MemdexError(f"Cannot serve HTTP on {s.host}:{s.port}: {exc.strerror or exc}.") from exc
        port = sock.getsockname()[1]
        config = uvicorn.Config(
            self.app(gate, port, engine),
            log_level="warning",
            access_log=False,
            ssl_certfile=str(s.tls_cert) if s.tls_cert else None,
            ssl_keyfile=str(s.tls_key) if s.tls_key else None,
            timeout_graceful_shutdown=3,
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="memdex-http"
        )
        self._thread.start()
        self._thread.join(0.01)
        while not self._server.started and self._thread.is_alive() and timeout > 0:
            self._thread.join(0.02)
            timeout -= 0.02
        if not self._server.started:
            self.stop()
            raise MemdexError(f"HTTP on {s.host}:{port} did not start (see the log above).")
        host = f"[{s.host}]" if family == socket.AF_INET6 else s.host
        return f"{s.scheme}://{host}:{port}"

    @property
    def requests(self) -> int:
        "HTTP requests answered so far (refused ones included)."
        return self.guard.requests if self.guard else 0

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join()

    def app(self, gate: Gate, port: int, engine: Engine) -> Any:
        "The ASGI app: the JSON routes and MCP, behind the token or the Host check, on the server's engine."
        from mcp.server.transport_security import TransportSecuritySettings

        from memdex.doors.mcp_server import build

        mcp = build(self.db_path, guard=gate.shared, files=False, engine=engine)
        endpoints = Endpoints(self.db_path, gate, engine)
        for path, handler in (
            ("/search", endpoints.search),
            ("/show", endpoints.show),
            ("/health", endpoints.health),
        ):
            mcp.custom_route(path, methods=["GET"])(_route(handler))
        s = self.settings
        hosts = None
        if s.token is None:  # loopback: this machine's names only, as memdex mcp --http
            names = dict.fromkeys([s.host, "127.0.0.1", "localhost", "[::1]"])
            hosts = {f"{h}:{port}" for h in names}
            security = TransportSecuritySettings(
                enable_dns_rebinding_protection=True,
                allowed_hosts=sorted(hosts),
                allowed_origins=[f"{s.scheme}://{h}" for h in sorted(hosts)],
            )
        else:  # the token decides; behind a proxy the Host is a name only the proxy knows
            security = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        inner = mcp.streamable_http_app(transport_security=security, host=s.host)
        self.guard = Guard(inner, s.token, hosts)
        return self.guard


def _route(handler: Callable[[list[tuple[str, str]]], tuple[int, bytes]]) -> Any:
    "A Starlette endpoint running ``handler`` on a worker thread."
    import anyio.to_thread
    from starlette.requests import Request
    from starlette.responses import Response

    async def endpoint(request: Request) -> Response:
        status, body = await anyio.to_thread.run_sync(partial(handler, request.query_params.multi_items()))
        return Response(body, status_code=status, media_type="application/json")

    return endpoint


class Guard:
    "ASGI middleware: 401 without the token; 421 for a Host that is not this machine's."

    def __init__(self, app: Any, token: str | None, hosts: set[str] | None) -> None:
        self.app = app
        self.token = token
        self.hosts = hosts
        self.requests = 0  # counted on the event loop's thread alone

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            self.requests += 1
            headers = dict(scope["headers"])
            status = 0
            if self.token is not None and not authorized(headers.get(b"authorization"), self.token):
                status = 401
            elif self.hosts is not None and headers.get(b"host", b"").decode("latin-1") not in self.hosts:
                status = 421
            if status:
                extra = [(b"www-authenticate", b"Bearer")] if status == 401 else []
                await send(
                    {
                        "type": "http.response.start",
                        "status": status,
                        "headers": [(b"content-length", b"0"), *extra],
                    }
                )
                await send({"type": "http.response.body", "body": b""})
                return
        await self.app(scope, receive, send)


class Endpoints:
    "The JSON routes: each parses its parameters, calls one library function, renders JSON."

    def __init__(self, db_path: Path, gate: Gate, engine: Engine) -> None:
        self.db_path = db_path
        self.gate = gate
        self.engine = engine

    def health(self, params: list[tuple[str, str]]) -> tuple[int, bytes]:
        return 200, _json({"ok": True, "version": __version__})

    def search(self, params: list[tuple[str, str]]) -> tuple[int, bytes]:
        def work(conn: sqlite3.Connection) -> Any:
            from memdex.doors.dispatch import run
            from memdex.query.options import parse_text

            asked = parse_text(None, params, refused=WRITES)
            return run(conn, asked.request, engine=self.engine, **asked.answer).to_dict()

        return self._answer(work)

    def show(self, params: list[tuple[str, str]]) -> tuple[int, bytes]:
        def work(conn: sqlite3.Connection) -> Any:
            from memdex.query.documents import get_document

            return get_document(conn, **show_params(params))

        return self._answer(work)

    def _answer(self, work: Callable[[sqlite3.Connection], Any]) -> tuple[int, bytes]:
        from memdex.doors.mcp_server import ERRORS, error_type
        from memdex.store import db

        try:
            with self.gate.shared():
                conn = db.connect(self.db_path, create=False, readonly=True, upgrade=True)
                try:
                    return 200, _json(work(conn))
                finally:
                    conn.close()
        except (MemdexError, sqlite3.OperationalError) as exc:
            kind = error_type(exc)
            return STATUS[kind], _json({"error": {"type": kind, "message": str(exc), "retry": ERRORS[kind]}})
        except Exception as exc:  # the door's boundary: a bug is a 500 that says so...
            if raise_errors():  # ...and under test it shows
                raise
            log.exception("HTTP request failed")
            body = {
                "type": "internal",
                "message": f"{type(exc).__name__}: {exc}",
                "retry": ERRORS["internal"],
            }
            return 500, _json({"error": body})


def _json(data: Any) -> bytes:
    "What the command line prints for --json, newline included."
    from memdex.doors.render import to_json

    return (to_json(data) + "\n").encode("utf-8")


def show_params(params: list[tuple[str, str]]) -> dict[str, Any]:
    "get_document's arguments from ref (or id, or path), lines (12-30, 12-, -30) and max_tokens."
    out: dict[str, Any] = {}
    for raw, value in params:
        name = raw.replace("-", "_")
        if name in ("ref", "id", "path"):
            out["ref"] = value
        elif name == "lines":
            start, sep, end = value.partition("-")
            try:
                out["line_start"] = int(start) if start.strip() else None
                out["line_end"] = int(end) if end.strip() else (None if sep else out["line_start"])
            except ValueError:
                raise InvalidParameter(
                    f"lines {value!r} is not a line range: use 12-30, 12- or -30."
                ) from None
        elif name == "max_tokens":
            out["max_tokens"] = _number(raw, value, int, 1, None)
        else:
            raise InvalidParameter(f"unknown parameter {raw!r}; /show takes ref, lines and max_tokens.")
    if "ref" not in out:
        raise InvalidParameter("give the document as ref: an id, a path or a key, as a result names it.")
    return out


def _number(name: str, value: str, kind: type, low: float, high: float | None) -> Any:
    try:
        number = kind(value)
    except ValueError:
        raise InvalidParameter(f"{name} must be a number, not {value!r}.") from None
    if number < low or (high is not None and number > high) or number != number:
        bound = f"from {low} to {high}" if high is not None else f"{low} or more"
        raise InvalidParameter(f"{name} must be {bound}, not {value!r}.")
    return number
