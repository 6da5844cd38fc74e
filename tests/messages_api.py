"""A small HTTP server on 127.0.0.1 that speaks the Anthropic Messages API, for tests.

The real ``anthropic`` client talks to it over HTTP through ``ANTHROPIC_BASE_URL``. It checks
what the API checks (``x-api-key``, ``anthropic-version``, a JSON body with model, max_tokens
and messages), records every request, and answers each one with the next scripted reply:
a tool call built from the sources in the prompt (as a model would), one of the API's
error responses, a slow reply, or a reply of the wrong shape. No test reaches the network.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "sk-ant-test-key-0123456789"
Reply = tuple[int, dict[str, str], dict[str, Any]]  # status, headers, JSON body
Behaviour = Callable[[dict[str, Any]], Reply]


def message(body: dict[str, Any], content: list[dict[str, Any]], stop: str = "tool_use") -> Reply:
    return (
        200,
        {},
        {
            "id": "msg_test_0001",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-test"),
            "content": content,
            "stop_reason": stop,
            "stop_sequence": None,
            "usage": {"input_tokens": len(json.dumps(body)) // 4, "output_tokens": 120},
        },
    )


def tool_use(body: dict[str, Any], name: str, data: dict[str, Any]) -> Reply:
    return message(body, [{"type": "tool_use", "id": "toolu_test_01", "name": name, "input": data}])


def error(status: int, kind: str, text: str, headers: dict[str, str] | None = None) -> Behaviour:
    def reply(body: dict[str, Any]) -> Reply:
        return status, headers or {}, {"type": "error", "error": {"type": kind, "message": text}}

    return reply


def prompt_of(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


def sources_in(body: dict[str, Any]) -> list[tuple[int, str]]:
    "(number, title) of each <source> in the prompt."
    return [(int(n), t) for n, t in re.findall(r'<source n="(\d+)" title="([^"]*)"', prompt_of(body))]


def answer(body: dict[str, Any], extra_citations: tuple[int, ...] = ()) -> Reply:
    "What a model would do: one cited detail per source, in the order the prompt lists them."
    tool = body["tool_choice"]["name"]
    if tool == "next_search":
        return tool_use(body, tool, {"terms": ["truncation", "context window"]})
    sources = sources_in(body)
    # a model groups its claims: the first two sources' under one heading, the rest under another
    details = [
        {
            "text": f"{title} is one of them [{n}].",
            "citations": [n],
            "confidence": 0.8,
            "category": "First findings" if i < 2 else "Other findings",
        }
        for i, (n, title) in enumerate(sources[:4])
    ]
    for bogus in extra_citations:
        details.append({"text": f"A claim from nowhere [{bogus}].", "citations": [bogus], "confidence": 0.9})
    first = sources[0][0] if sources else 1
    return tool_use(
        body,
        tool,
        {
            "summary": f"The sources describe {len(sources)} related items [{first}].",
            "details": details,
            "analysis": f"The findings agree with each other [{first}].",
            "caveats": ["Only what the sources say."],
            "why_cited": [{"source": n, "why": f"it is about {t}"} for n, t in sources[:4]],
        },
    )


class MessagesAPI:
    "The server. Use as a context manager; ``script`` replies in order, then ``answer``."

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.script: deque[Behaviour] = deque()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def then(self, *behaviours: Behaviour) -> MessagesAPI:
        self.script.extend(behaviours)
        return self

    def __enter__(self) -> MessagesAPI:
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                length = int(self.headers.get("content-length", 0))
                raw = self.rfile.read(length)
                api.headers.append({k.lower(): v for k, v in self.headers.items()})
                if self.path.rstrip("/") != "/v1/messages":
                    return self._send(*error(404, "not_found_error", f"no route {self.path}")({}))
                bearer = self.headers.get("authorization", "").removeprefix("Bearer ")
                if KEY not in (self.headers.get("x-api-key"), bearer):
                    return self._send(*error(401, "authentication_error", "invalid x-api-key")({}))
                if not self.headers.get("anthropic-version"):
                    return self._send(*error(400, "invalid_request_error", "anthropic-version missing")({}))
                try:
                    body = json.loads(raw)
                    assert body["model"] and body["max_tokens"] > 0 and body["messages"]
                except (ValueError, KeyError, AssertionError, TypeError):
                    return self._send(*error(400, "invalid_request_error", "bad request body")({}))
                api.requests.append(body)
                behaviour = api.script.popleft() if api.script else answer
                self._send(*behaviour(body))

            def _send(self, status: int, headers: dict[str, str], payload: dict[str, Any]) -> None:
                data = json.dumps(payload).encode()
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    self.send_header("request-id", "req_test")
                    for k, v in headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = False  # server_close() joins every request thread
        self._thread = threading.Thread(target=self._serve, name="messages-api", daemon=True)
        self._thread.start()
        return self

    def _serve(self) -> None:
        # shutdown() waits for the loop to look again: at the default 0.5 s that was half a
        # second of every test using this server, for nothing.
        assert self._server is not None
        self._server.serve_forever(poll_interval=0.02)

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def slow(seconds: float) -> Behaviour:
    def reply(body: dict[str, Any]) -> Reply:
        time.sleep(seconds)
        return answer(body)

    return reply


@contextmanager
def serving(*behaviours: Behaviour) -> Iterator[MessagesAPI]:
    with MessagesAPI().then(*behaviours) as api:
        yield api
