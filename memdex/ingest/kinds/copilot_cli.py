"""copilot-cli: GitHub Copilot CLI sessions, ``~/.copilot/session-state/<id>/events.jsonl``.

- One event a line, ``{type, data, id, timestamp, parentId}`` (an earlier layout kept
  ``session-state/<id>.jsonl``): read on as it grows.
- ``session.start`` and ``session.resume`` give the session id, the version and the context
  (``cwd`` is the project, ``branch``); ``session.model_change`` and the messages the model.
- ``user.message`` (its ``content``, not the ``transformedContent`` the CLI wraps in
  reminders) and ``assistant.message`` (its ``content``) are what was said. An assistant
  message's ``toolRequests``, ``tool.execution_complete`` results and reasoning
  (``reasoningText``, ``assistant.reasoning``) are Tool and Thinking lines, trimmed
  (``sessions.TOOL_BYTES``); ``session.error`` and ``abort`` are System lines. A subagent's
  messages (``parentToolCallId``) are marked ``[subagent]``.
- Left out: the system prompt, hooks, tool starts (the request says it), turn marks, usage
  and shutdown metrics; truncations and compactions are counted.
- The title is the first prompt.
- The older ``~/.copilot/history-session-state/<id>.json`` (one object: ``sessionId``,
  ``startTime``, ``timeline`` of user / copilot / info / tool_call_completed entries, and
  ``chatMessages`` in OpenAI's shape, read when there is no timeline) is read whole; it
  records no folder.
"""

from __future__ import annotations

import json
from typing import Any

from memdex.errors import IngestError
from memdex.ingest.base import SNIFF_BYTES, SourceFile
from memdex.ingest.chat import first_words, to_document
from memdex.ingest.sessions import (
    TEXT_BYTES,
    Line,
    SessionKind,
    SessionReader,
    call_text,
    first_text,
    trimmed,
)
from memdex.models import ParsedFile
from memdex.utils import as_date

# What a tool call's arguments are shown by, first found first (sessions.call_text).
_CALL_KEYS = ("command", "path", "file_path", "pattern", "query", "url", "prompt", "intent")


def _shown(arguments: Any) -> str:
    return call_text(arguments, _CALL_KEYS, json_text=True)


def _result_text(result: Any) -> str:
    if isinstance(result, dict):
        for key in ("content", "log", "textResultForLlm", "detailedContent"):
            if isinstance(result.get(key), str) and result[key]:
                return result[key]
        return json.dumps(result, ensure_ascii=False)
    return result if isinstance(result, str) else ""


class CopilotReader(SessionReader):
    platform = "copilot-cli"

    def feed(self, line: Line) -> None:
        record = line.record
        kind = record.get("type")
        data: dict[str, Any] = record["data"] if isinstance(record.get("data"), dict) else {}
        time = as_date(record.get("timestamp"))
        if kind in ("session.start", "session.resume"):
            self._context(data)
        elif kind == "session.model_change" and isinstance(data.get("newModel"), str):
            self.meta["model"] = data["newModel"]
        elif kind == "user.message":
            text = first_text(data.get("content")).strip()
            if text and not self.title:
                self.title = first_words(text)
            self.say("user", trimmed(text, TEXT_BYTES), time)
        elif kind == "assistant.message":
            self._assistant(data, time)
        elif kind == "assistant.reasoning":
            self.say("thinking", trimmed(self._mark(data) + first_text(data.get("content"))), time)
        elif kind == "tool.execution_complete":
            error = "" if data.get("success", True) else "[error] "
            self.say(
                "tool", trimmed(f"{self._mark(data)}[result] {error}{_result_text(data.get('result'))}"), time
            )
        elif kind == "session.error":
            self.say("system", trimmed(f"[error] {data.get('message') or ''}"), time)
        elif kind == "abort":
            self.say("system", f"[aborted] {data.get('reason') or ''}".strip(), time)
        elif kind in ("session.truncation", "session.compaction_complete"):
            self.meta["compactions"] = int(self.meta.get("compactions", 0)) + 1

    def _context(self, data: dict[str, Any]) -> None:
        if isinstance(data.get("sessionId"), str) and not self.id:
            self.id = data["sessionId"]
            self.meta["session"] = self.id
        self.created = self.created or as_date(data.get("startTime"))
        if isinstance(data.get("copilotVersion"), str):
            self.meta["version"] = data["copilotVersion"]
        if isinstance(data.get("selectedModel"), str):
            self.meta["model"] = data["selectedModel"]
        context = data.get("context")
        if isinstance(context, dict):
            for field, name in (("cwd", "project"), ("branch", "branch"), ("repository", "repository")):
                if isinstance(context.get(field), str) and context[field]:
                    self.meta[name] = context[field]

    def _assistant(self, data: dict[str, Any], time: str | None) -> None:
        mark = self._mark(data)
        if isinstance(data.get("model"), str) and data["model"] and not mark:
            self.meta["model"] = data["model"]
        if isinstance(data.get("reasoningText"), str) and data["reasoningText"].strip():
            self.say("thinking", trimmed(mark + data["reasoningText"]), time)
        text = first_text(data.get("content")).strip()
        if text:
            self.say("assistant", trimmed(mark + text, TEXT_BYTES), time)
        for request in data.get("toolRequests") or []:
            if isinstance(request, dict):
                name = request.get("name") or "tool"
                self.say("tool", trimmed(f"{mark}[{name}] {_shown(request.get('arguments'))}"), time)

    @staticmethod
    def _mark(data: dict[str, Any]) -> str:
        return "[subagent] " if data.get("parentToolCallId") else ""


class CopilotCliKind(SessionKind):
    name = "copilot-cli"
    description = (
        "GitHub Copilot CLI session: ~/.copilot/session-state/<id>/events.jsonl (and older <id>.json)"
    )
    suffixes: tuple[str, ...] = (".json", ".jsonl")
    reader = CopilotReader
    locations = ("~/.copilot/session-state", "~/.copilot/history-session-state")

    def claims(self, rel_path: str) -> bool:
        return rel_path.lower().endswith(self.suffixes)

    def sniff(self, data: bytes) -> bool:
        head = data[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
        if head.startswith(b"{") and b'"sessionId"' in head[:2000]:
            if b'"chatMessages"' in head or b'"timeline"' in head:
                return True  # the older session JSON
        first = head.split(b"\n", 1)[0]
        try:
            record = json.loads(first)
        except ValueError:
            return b'"type":"session.start"' in head
        kind = record.get("type") if isinstance(record, dict) else None
        return (
            isinstance(kind, str)
            and kind.split(".")[0] in ("session", "user", "assistant", "system", "tool", "hook")
            and "." in kind
            and isinstance(record.get("data"), dict)
        )

    def parse(self, source: SourceFile) -> ParsedFile:
        if source.path.suffix.lower() == ".jsonl":
            return super().parse(source)
        return self._parse_json(source)

    def _parse_json(self, source: SourceFile) -> ParsedFile:
        data = source.json()
        if not isinstance(data, dict):
            raise IngestError("expected a Copilot CLI session object (sessionId, timeline, chatMessages)")
        parsed = ParsedFile(kind=self.name)
        reader = self.reader()
        reader._context(data)
        timeline = data.get("timeline")
        entries = timeline if isinstance(timeline, list) and timeline else data.get("chatMessages") or []
        read = _timeline if entries is timeline else _chat_message
        for n, entry in enumerate(entries):
            if isinstance(entry, dict):
                read(reader, entry)
            else:
                field = "timeline" if entries is timeline else "chatMessages"
                parsed.skipped.append((f"{field}[{n}]", "not an object; the others are indexed"))
        if reader.messages:
            parsed.documents.append(to_document(reader.conversation(source.path.stem), source, self.name))
        return parsed


def _timeline(reader: CopilotReader, entry: dict[str, Any]) -> None:
    kind, time = entry.get("type"), as_date(entry.get("timestamp"))
    text: str = entry["text"] if isinstance(entry.get("text"), str) else ""
    if kind == "user":
        reader.title = reader.title or first_words(text)
        reader.say("user", trimmed(text, TEXT_BYTES), time)
    elif kind == "copilot":
        reader.say("assistant", trimmed(text, TEXT_BYTES), time)
    elif kind and str(kind).startswith("tool_call"):
        name = entry.get("name") or entry.get("toolTitle") or "tool"
        reader.say("tool", trimmed(f"[{name}] {_shown(entry.get('arguments'))}"), time)
        result = entry.get("result")
        if isinstance(result, dict) and result:
            error = "" if result.get("type") in (None, "success") else f"[{result.get('type')}] "
            reader.say("tool", trimmed(f"[result] {error}{_result_text(result)}"), time)
    elif kind == "error":
        reader.say("system", trimmed(f"[error] {text}"), time)


def _chat_message(reader: CopilotReader, message: dict[str, Any]) -> None:
    role, text = message.get("role"), first_text(message.get("content")).strip()
    if role == "user":
        reader.title = reader.title or first_words(text)
        reader.say("user", trimmed(text, TEXT_BYTES), None)
    elif role == "assistant":
        reader.say("assistant", trimmed(text, TEXT_BYTES), None)
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                reader.say(
                    "tool",
                    trimmed(f"[{function.get('name', 'tool')}] {_shown(function.get('arguments'))}"),
                    None,
                )
    elif role == "tool":
        reader.say("tool", trimmed(f"[result] {first_text(message.get('content'))}"), None)
