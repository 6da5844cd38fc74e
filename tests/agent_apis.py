"""Local model servers that coding agents' CLIs talk to in the tests: Anthropic's Messages API
as Claude Code streams it, OpenAI's Responses API as Codex streams it, and Gemini's
streamGenerateContent, each on 127.0.0.1 (tests/messages_api.py serves memdex's own calls).

Each plays a scripted model that knows one trick: asked anything while a tool whose name
ends in ``search_knowledge_base`` is offered, it calls that tool with ``QUERY`` (once per
conversation); once the conversation holds the tool's result, it answers with a line that
quotes it. Every request is recorded, so a test can check what the CLI sent (its tools, its
system prompt, the hook's context) and that memdex's result reached the model. Requests that
offer no such tool (a CLI's own side calls: titles, summaries) get a short plain answer.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

KEY = "sk-test-agents-0123456789"
TOOL = "search_knowledge_base"
QUERY = "zebra migration plan"
ANSWER = "memdex found it:"
SEARCH_RETRIES = 40  # tool searches before the model gives up on a tool still starting


def _text_of(value: Any) -> str:
    "Every string inside a JSON value, joined: where a tool's result sits in any API's shape."
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return "\n".join(_text_of(v) for v in value.values())
    if isinstance(value, list):
        return "\n".join(_text_of(v) for v in value)
    return ""


class ModelServer:
    "A scripted model behind one API shape. Use as a context manager."

    name = "model"

    def __init__(self, query: str = QUERY) -> None:
        self.query = query
        self.requests: list[dict[str, Any]] = []  # {"path", "headers", "body"}
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    # what a subclass says -------------------------------------------------------------
    def tool_names(self, body: dict[str, Any]) -> list[str]:
        raise NotImplementedError

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        "The text of every result of memdex's tool in the conversation so far."
        raise NotImplementedError

    def reply(self, path: str, body: dict[str, Any]) -> Iterator[bytes]:
        raise NotImplementedError

    # the model ------------------------------------------------------------------------
    def decide(self, body: dict[str, Any]) -> tuple[str, str, dict[str, Any]]:
        """What the model does next: ("call", tool, arguments) or ("say", text, {}). It calls
        memdex's tool when offered; a tool offered only by name (Claude Code's deferred MCP
        tools) it first asks for by its tool search, as a model would."""
        offered = self.tool_names(body)
        results = self.tool_results(body)
        if results:  # a model reads the titles memdex found out of its JSON
            titles = re.findall(r'"title": ?"((?:[^"\\]|\\.)*)"', results[-1])
            said = "; ".join(dict.fromkeys(titles)) or " ".join(results[-1].split())[:400]
            return "say", f"{ANSWER} {said}", {}
        mine = [t for t in offered if t.endswith(TOOL)]
        if mine:
            return "call", mine[0], {"query": self.query}
        for search in ("ToolSearch", "tool_search"):
            if search in offered and not self.asked_tool_search(body):
                return "call", search, {"query": TOOL}
        return "say", "ok", {}

    def asked_tool_search(self, body: dict[str, Any]) -> bool:
        return False

    def calls(self) -> list[dict[str, Any]]:
        "The requests that offered memdex's tool."
        return [r for r in self.requests if any(t.endswith(TOOL) for t in self.tool_names(r["body"]))]

    def results_seen(self) -> list[str]:
        "Every tool result the CLI sent back to the model."
        return [text for r in self.requests for text in self.tool_results(r["body"])]

    # HTTP -----------------------------------------------------------------------------
    def __enter__(self) -> ModelServer:
        api = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self) -> None:  # noqa: N802 (http.server's naming)
                api.requests.append({"path": self.path, "headers": dict(self.headers), "body": {}})
                self._send(404, b'{"error": {"message": "not here"}}')

            def do_HEAD(self) -> None:  # noqa: N802
                self.send_response(200)
                self.send_header("content-length", "0")
                self.end_headers()

            def do_POST(self) -> None:  # noqa: N802
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                try:
                    body = json.loads(raw) if raw else {}
                except ValueError:
                    body = {"raw": raw.decode("utf-8", "replace")}
                api.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                chunks = list(api.reply(self.path, body))
                if chunks and chunks[0].startswith(b"{"):
                    return self._send(200, b"".join(chunks))
                self.send_response(200)
                self.send_header("content-type", "text/event-stream")
                self.send_header("cache-control", "no-cache")
                self.send_header("content-length", str(sum(len(c) for c in chunks)))
                self.end_headers()
                for chunk in chunks:
                    self.wfile.write(chunk)

            def _send(self, status: int, data: bytes) -> None:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = False
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, name=self.name, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._server is not None and self._thread is not None
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


def _fill(schema: dict[str, Any]) -> Any:
    "The smallest value a JSON schema (Gemini's upper-case types too) accepts."
    kind = str(schema.get("type", "object")).lower()
    if kind == "object":
        props = schema.get("properties") or {}
        return {k: _fill(props[k]) for k in schema.get("required") or props}
    if kind == "array":
        return []
    if kind in ("integer", "number"):
        return 10
    if kind == "boolean":
        return False
    return (schema.get("enum") or ["ok"])[0]


def sse(event: str | None, data: dict[str, Any]) -> bytes:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n".encode()


class AnthropicServer(ModelServer):
    "Anthropic's Messages API (``POST /v1/messages``), streamed as Claude Code asks for it."

    name = "anthropic-api"

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [t.get("name", "") for t in body.get("tools") or []]

    def _blocks(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            block
            for message in body.get("messages") or []
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if isinstance(block, dict)
        ]

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        blocks = self._blocks(body)
        mine = {
            b.get("id") for b in blocks if b.get("type") == "tool_use" and b.get("name", "").endswith(TOOL)
        }
        return [
            _text_of(b.get("content"))
            for b in blocks
            if b.get("type") == "tool_result" and b.get("tool_use_id") in mine
        ]

    def asked_tool_search(self, body: dict[str, Any]) -> bool:
        """Claude Code's ToolSearch finds an MCP server's tools once the server has connected;
        until then the model asks again, a little later (memdex's server takes seconds to
        start on a busy machine)."""
        asked = sum(b.get("type") == "tool_use" and b.get("name") == "ToolSearch" for b in self._blocks(body))
        if asked and asked < SEARCH_RETRIES:
            time.sleep(0.5)
            return False
        return bool(asked)

    def system_text(self, body: dict[str, Any]) -> str:
        return _text_of(body.get("system")) + "\n" + _text_of(body.get("messages"))

    def reply(self, path: str, body: dict[str, Any]) -> Iterator[bytes]:
        if "count_tokens" in path:
            yield json.dumps({"input_tokens": len(json.dumps(body)) // 4}).encode()
            return
        action, value, arguments = self.decide(body)
        n = len(self.requests)
        message = {
            "id": f"msg_test_{n}",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "claude-test"),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 1},
        }
        if action == "call":
            block: dict[str, Any] = {"type": "tool_use", "id": f"toolu_test_{n}", "name": value, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(arguments)}
        else:
            block = {"type": "text", "text": ""}
            delta = {"type": "text_delta", "text": value}
        stop = "tool_use" if action == "call" else "end_turn"
        if not body.get("stream"):
            whole = {**block, "input": arguments} if action == "call" else {**block, "text": value}
            yield json.dumps({**message, "content": [whole], "stop_reason": stop}).encode()
            return
        yield sse("message_start", {"type": "message_start", "message": message})
        yield sse("content_block_start", {"type": "content_block_start", "index": 0, "content_block": block})
        yield sse("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta})
        yield sse("content_block_stop", {"type": "content_block_stop", "index": 0})
        yield sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop, "stop_sequence": None},
                "usage": {"output_tokens": 12},
            },
        )
        yield sse("message_stop", {"type": "message_stop"})


class ResponsesServer(ModelServer):
    "OpenAI's Responses API (``POST /v1/responses``), streamed as Codex asks for it."

    name = "responses-api"

    def __init__(self, query: str = QUERY) -> None:
        super().__init__(query)
        self.namespaces: dict[str, str] = {}  # a tool's name -> the namespace it came in

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        "Tools offered up front, and those a tool search brought in since (Codex defers MCP tools)."
        names = []
        tools = list(body.get("tools") or [])
        for item in self._items(body):
            if item.get("type") == "tool_search_output":
                tools += item.get("tools") or []
        for tool in tools:
            if tool.get("type") == "tool_search":
                names.append("tool_search")
            names.append(tool.get("name") or (tool.get("function") or {}).get("name", ""))
            for inner in tool.get("tools") or []:  # a namespace of tools: mcp__<server>
                names.append(inner.get("name", ""))
                self.namespaces[inner.get("name", "")] = tool.get("name", "")
        return [n for n in names if n]

    def asked_tool_search(self, body: dict[str, Any]) -> bool:
        """Codex answers a tool search with what its MCP servers have listed so far: while
        memdex's server is still starting, nothing. The model asks again, a little later."""
        items = self._items(body)
        outputs = [i for i in items if i.get("type") == "tool_search_output"]
        if any(o.get("tools") for o in outputs):
            return True
        if outputs and len(outputs) < SEARCH_RETRIES:
            time.sleep(0.5)
            return False
        return bool(outputs)

    def _items(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        items = body.get("input")
        return [i for i in items if isinstance(i, dict)] if isinstance(items, list) else []

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        items = self._items(body)
        mine = {
            i.get("call_id")
            for i in items
            if i.get("type") == "function_call" and i.get("name", "").endswith(TOOL)
        }
        return [
            _text_of(i.get("output"))
            for i in items
            if i.get("type") == "function_call_output" and i.get("call_id") in mine
        ]

    def reply(self, path: str, body: dict[str, Any]) -> Iterator[bytes]:
        action, value, arguments = self.decide(body)
        n = len(self.requests)
        response = {
            "id": f"resp_test_{n}",
            "object": "response",
            "status": "in_progress",
            "model": body.get("model"),
        }
        yield sse("response.created", {"type": "response.created", "response": response})
        if action == "call" and value == "tool_search":
            item: dict[str, Any] = {
                "type": "tool_search_call",
                "id": f"tsc_test_{n}",
                "call_id": f"call_test_{n}",
                "execution": "client",
                "status": "completed",
                "arguments": arguments,
            }
        elif action == "call":
            item = {
                "type": "function_call",
                "id": f"fc_test_{n}",
                "call_id": f"call_test_{n}",
                "name": value,
                "arguments": json.dumps(arguments),
                "status": "completed",
            }
            if value in self.namespaces:
                item["namespace"] = self.namespaces[value]
        else:
            item = {
                "type": "message",
                "id": f"msg_test_{n}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": value, "annotations": []}],
            }
        yield sse(
            "response.output_item.added",
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        )
        if action == "say":
            yield sse(
                "response.output_text.delta",
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": value,
                },
            )
        yield sse(
            "response.output_item.done",
            {"type": "response.output_item.done", "output_index": 0, "item": item},
        )
        usage = {
            "input_tokens": 10,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": 5,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 15,
        }
        done = {**response, "status": "completed", "output": [item], "usage": usage}
        yield sse("response.completed", {"type": "response.completed", "response": done})


class GeminiServer(ModelServer):
    "Gemini's generateContent and streamGenerateContent (``/v1beta/models/M:...``), as Gemini CLI calls them."

    name = "gemini-api"

    def tool_names(self, body: dict[str, Any]) -> list[str]:
        return [
            f.get("name", "")
            for tool in body.get("tools") or []
            for f in tool.get("functionDeclarations") or []
        ]

    def _parts(self, body: dict[str, Any]) -> list[dict[str, Any]]:
        return [p for c in body.get("contents") or [] for p in c.get("parts") or [] if isinstance(p, dict)]

    def tool_results(self, body: dict[str, Any]) -> list[str]:
        return [
            _text_of(p["functionResponse"].get("response"))
            for p in self._parts(body)
            if "functionResponse" in p and p["functionResponse"].get("name", "").endswith(TOOL)
        ]

    def reply(self, path: str, body: dict[str, Any]) -> Iterator[bytes]:
        if ":countTokens" in path:
            yield json.dumps({"totalTokens": len(json.dumps(body)) // 4}).encode()
            return
        config = body.get("generationConfig") or {}
        schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if schema:  # a side call that wants JSON (the CLI's model router): the least that fits
            action, value, arguments = "say", json.dumps(_fill(schema)), {}
        else:
            action, value, arguments = self.decide(body)
        part = {"functionCall": {"name": value, "args": arguments}} if action == "call" else {"text": value}
        chunk = {
            "candidates": [
                {"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5, "totalTokenCount": 15},
            "modelVersion": "gemini-test",
        }
        if ":streamGenerateContent" in path:
            yield sse(None, chunk)
        else:
            yield json.dumps(chunk).encode()
