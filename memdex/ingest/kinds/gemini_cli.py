"""gemini-cli: Gemini CLI sessions, ``~/.gemini/tmp/<project>/chats/session-*.json[l]``.

- ``session-<time>-<id8>.json``: one object ``{sessionId, projectHash, startTime, lastUpdated,
  messages, summary?, kind?, directories?}``, rewritten whole as the session goes: read whole.
  A newer Gemini CLI resuming it goes on in ``<name>.jsonl`` (copying it there first): a
  ``.json`` beside its ``.jsonl`` gives no document.
- ``session-*.jsonl`` (newer builds): a first line with those fields but ``messages``, then
  one message a line; ``{"$set": {...}}`` updates the fields (``messages`` in one replaces
  them all), ``{"$rewindTo": id}`` drops that message and those after it, and a message
  written again under its id replaces the first. Read on as it grows: the last message
  written again (its tokens, tool calls and their results arriving) adds what it did not
  have; anything else rewritten reads the file whole.
- Messages: ``user`` and ``gemini`` are what was said; a gemini message's ``thoughts`` are
  Thinking, its ``toolCalls`` (name, arguments, and result or error) Tool lines, trimmed
  (``sessions.TOOL_BYTES``); ``info``, ``warning`` and ``error`` are System lines.
- Title: the session's ``summary``, else its first prompt that is not a /command.
- Kept as meta: the session id, the model, the project folder -- ``.project_root`` beside
  ``chats/`` (Gemini CLI names its folders by a short id since 2026), else the path in
  ``~/.gemini/projects.json`` whose SHA-256 is the session's ``projectHash``. A subagent's
  session (``chats/<parent id>/<id>.jsonl``, ``kind: subagent``) is a document of its own,
  titled ``subagent: <its prompt>``.
- Older builds' ``logs.json`` (a list of ``{sessionId, messageId, type, message,
  timestamp}``: the prompts alone) is a document per session that ``chats/`` does not hold,
  and a ``/chat save`` checkpoint ``checkpoint-<tag>.json`` (``{history: [{role, parts}]}``
  or the list alone) is one document titled ``checkpoint <tag>``.
- A message that is not an object is reported (``path:messages[3]``, ``path:7`` for a
  line), the rest indexed.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from memdex.errors import IngestError
from memdex.ingest.base import SNIFF_BYTES, SourceFile
from memdex.ingest.chat import Conversation, Message, first_words, to_document
from memdex.ingest.sessions import (
    TEXT_BYTES,
    Line,
    SessionKind,
    SessionReader,
    WholeReadNeeded,
    call_text,
    trimmed,
)
from memdex.models import ParsedFile
from memdex.utils import as_date

_INJECTED = ("<session_context>", "<hook_context>")  # user turns Gemini CLI writes itself
_CHECKPOINT = re.compile(rb'^\s*(\{\s*"history"\s*:\s*)?\[\s*\{\s*"(role|parts)"\s*:')


def _mark(text: str) -> str:
    return hashlib.sha1(text.encode()).hexdigest()[:10]


def content_text(content: Any) -> str:
    "A message's ``content``: a string, or a list of parts of which the text ones count."
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if isinstance(content, list):
        return "\n".join(str(p.get("text") or "") for p in content if isinstance(p, dict) and p.get("text"))
    return ""


# What a tool call's arguments are shown by, first found first (sessions.call_text).
_CALL_KEYS = ("command", "file_path", "absolute_path", "path", "pattern", "query", "url", "prompt")


def _shown(arguments: Any) -> str:
    return call_text(arguments, _CALL_KEYS)


def _result(call: dict[str, Any]) -> str | None:
    "What a tool call gave back, or None while it has not."
    parts = call.get("result")
    texts: list[str] = []
    if isinstance(parts, list):
        for part in parts:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            body = response.get("response") if isinstance(response, dict) else None
            if isinstance(body, dict):
                value = body.get("output", body.get("error", body))
                texts.append(value if isinstance(value, str) else json.dumps(value, ensure_ascii=False))
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
    if not texts and isinstance(call.get("resultDisplay"), str) and call["resultDisplay"]:
        texts.append(call["resultDisplay"])
    status = call.get("status")
    if not texts and status not in ("error", "cancelled"):
        return None
    mark = {"error": "[error] ", "cancelled": "[cancelled] "}.get(str(status), "")
    return f"[result] {mark}" + "\n".join(texts)


class GeminiCliReader(SessionReader):
    """A session's message records, in the order Gemini CLI keeps them. A whole read gathers
    them (a record written again replaces the first, a rewind drops the tail) and says them at
    the end; a resumed read says each new one as it comes."""

    platform = "gemini-cli"

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.resumed = state is not None
        self.records: dict[str, dict[str, Any]] = {}  # a whole read: id -> latest record
        self.ids: list[str] = []  # marks of every message said
        self.last: dict[str, Any] = {}  # the last message said: id, its calls, results, thoughts
        self.title_from = ""
        super().__init__(state)

    def resume(self, state: dict[str, Any]) -> None:
        super().resume(state)
        self.ids = list(state.get("ids", []))
        self.last = dict(state.get("last", {}))
        self.title_from = str(state.get("title_from", ""))

    def state(self) -> dict[str, Any]:
        return {**super().state(), "ids": self.ids, "last": self.last, "title_from": self.title_from}

    # -- records -------------------------------------------------------------------------
    def feed(self, line: Line) -> None:
        record = line.record
        if isinstance(record.get("$rewindTo"), str):
            if self.resumed:
                raise WholeReadNeeded("the session was rewound")
            self._rewind(record["$rewindTo"])
        elif isinstance(record.get("$set"), dict):
            update = record["$set"]
            if "messages" in update:
                if self.resumed:
                    raise WholeReadNeeded("the session's messages were replaced")
                self.records = {}
                for message in update["messages"] if isinstance(update["messages"], list) else []:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        self.records[message["id"]] = message
            self.header(update)
        elif isinstance(record.get("id"), str):
            self.message(record)
        elif isinstance(record.get("sessionId"), str):
            self.header(record)

    def header(self, fields: dict[str, Any]) -> None:
        "The session's own fields: its first line, a $set, or the object of a .json file."
        if isinstance(fields.get("sessionId"), str) and not self.id:
            self.id = fields["sessionId"]
            self.meta.setdefault("session", self.id)
        self.created = self.created or as_date(fields.get("startTime"))
        updated = as_date(fields.get("lastUpdated"))
        if updated:
            self.updated = max(self.updated or updated, updated)
        if isinstance(fields.get("projectHash"), str):
            self.meta["project_hash"] = fields["projectHash"]
        if fields.get("kind") == "subagent":
            self.meta["subagent"] = True
        summary = fields.get("summary")
        if isinstance(summary, str) and summary.strip():
            self.title, self.title_from = first_words(summary.strip(), 100), "summary"

    def message(self, record: dict[str, Any]) -> None:
        ident = record["id"]
        if not self.resumed:
            self.records[ident] = record
            return
        if self.last.get("id") == ident:
            self._again(record)
        elif _mark(ident) in self.ids:
            raise WholeReadNeeded(f"message {ident} was written again")
        else:
            self._say(record)

    def _rewind(self, ident: str) -> None:
        keys = list(self.records)
        self.records = {k: self.records[k] for k in keys[: keys.index(ident)]} if ident in keys else {}

    def finish(self) -> None:
        for record in self.records.values():
            self._say(record)
        self.records = {}

    # -- one message ---------------------------------------------------------------------
    def _say(self, record: dict[str, Any]) -> None:
        self.ids.append(_mark(record["id"]))
        self.last = {"id": record["id"], "calls": [], "results": [], "thoughts": 0, "text": ""}
        time = as_date(record.get("timestamp"))
        kind = record.get("type")
        text = content_text(record.get("content")).strip()
        if kind == "user" and text.startswith(_INJECTED):
            self.say("tool", trimmed(text), time)  # the CLI's context: hidden in its own UI too
        elif kind == "user":
            self.say("user", trimmed(text, TEXT_BYTES), time)
            if text and not text.startswith("/") and self.title_from not in ("summary", "prompt"):
                self.title, self.title_from = first_words(text), "prompt"
        elif kind == "gemini":
            self._thoughts(record, time)
            self.say("assistant", trimmed(text, TEXT_BYTES), time)
            self.last["text"] = _mark(text)
            self._calls(record, time)
        elif kind in ("info", "warning", "error"):
            self.say("system", trimmed(f"[{kind}] {text}"), time)

    def _again(self, record: dict[str, Any]) -> None:
        "The last message written again: what it gained is said; a change to what it said is not followed."
        time = as_date(record.get("timestamp"))
        text = content_text(record.get("content")).strip()
        if _mark(text) != self.last.get("text"):
            if self.last.get("text") != _mark(""):
                raise WholeReadNeeded("the last message's text changed")
            self.say("assistant", trimmed(text, TEXT_BYTES), time)
            self.last["text"] = _mark(text)
        self._thoughts(record, time)
        self._calls(record, time)

    def _thoughts(self, record: dict[str, Any], time: str | None) -> None:
        thoughts = [t for t in record.get("thoughts") or [] if isinstance(t, dict)]
        for thought in thoughts[int(self.last.get("thoughts", 0)) :]:
            said = ": ".join(str(thought.get(k) or "") for k in ("subject", "description") if thought.get(k))
            self.say("thinking", trimmed(said), time)
        self.last["thoughts"] = len(thoughts)
        if isinstance(record.get("model"), str) and record["model"]:
            self.meta["model"] = record["model"]

    def _calls(self, record: dict[str, Any], time: str | None) -> None:
        for call in record.get("toolCalls") or []:
            if not isinstance(call, dict):
                continue
            ident = str(call.get("id") or call.get("name"))
            if ident not in self.last["calls"]:
                self.last["calls"].append(ident)
                name = call.get("displayName") or call.get("name") or "tool"
                self.say(
                    "tool",
                    trimmed(f"[{name}] {_shown(call.get('args'))}"),
                    as_date(call.get("timestamp")) or time,
                )
            result = _result(call)
            if result is not None and ident not in self.last["results"]:
                self.last["results"].append(ident)
                self.say("tool", trimmed(result), as_date(call.get("timestamp")) or time)

    def conversation(self, fallback_id: str) -> Conversation:
        conv = super().conversation(fallback_id)
        if self.meta.get("subagent") and not conv.title.startswith("subagent: "):
            conv.title = f"subagent: {conv.title}"
        return conv


class GeminiCliKind(SessionKind):
    name = "gemini-cli"
    description = (
        "Gemini CLI session: ~/.gemini/tmp/<project>/chats/session-*.json[l], logs.json, checkpoints"
    )
    suffixes: tuple[str, ...] = (".json", ".jsonl")
    reader = GeminiCliReader
    locations = ("~/.gemini/tmp",)

    def claims(self, rel_path: str) -> bool:
        return rel_path.lower().endswith(self.suffixes)

    def sniff(self, data: bytes) -> bool:
        head = data[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf \t\r\n")
        first = head.split(b"\n", 1)[0]
        if b'"sessionId"' in first and b'"projectHash"' in first:
            return True  # a .jsonl session's first line, or a .json session on one line
        if head.startswith(b"{") and b'"sessionId"' in head and b'"projectHash"' in head:
            return b'"messages"' in head
        if head.startswith(b"[") and b'"sessionId"' in head[:400] and b'"messageId"' in head[:400]:
            return True  # logs.json
        return bool(_CHECKPOINT.match(head)) and b'"parts"' in head[:600]

    def parse(self, source: SourceFile) -> ParsedFile:
        if source.path.suffix.lower() == ".jsonl":
            parsed = super().parse(source)
        else:
            parsed = self._parse_json(source)
        # Kept where a read resumed from the tail starts too (its state's meta).
        metas = [d.meta for d in parsed.documents] + ([parsed.tail.state["meta"]] if parsed.tail else [])
        project = project_of(source.path, parsed)
        for meta in metas:
            if project:
                meta["project"] = project
            if meta.get("subagent"):
                meta["session"] = source.path.parent.name  # its parent's: the one to resume
        return parsed

    def _parse_json(self, source: SourceFile) -> ParsedFile:
        data = source.json()
        parsed = ParsedFile(kind=self.name)
        if source.path.with_suffix(".jsonl").is_file():
            return parsed  # resumed by a newer Gemini CLI, which goes on in <name>.jsonl
        if isinstance(data, dict) and isinstance(data.get("messages"), list):
            reader = self.reader()
            reader.header(data)
            for n, message in enumerate(data["messages"]):
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    reader.message(message)
                else:
                    parsed.skipped.append((f"messages[{n}]", "not a message object; the others are indexed"))
            reader.finish()
            if reader.messages:
                parsed.documents.append(to_document(reader.conversation(source.path.stem), source, self.name))
        elif isinstance(data, list) and data and isinstance(data[0], dict) and "messageId" in data[0]:
            parsed.documents += _logs(data, source, parsed)
        elif isinstance(data, (list, dict)):
            history = data.get("history") if isinstance(data, dict) else data
            if not isinstance(history, list):
                raise IngestError("expected a Gemini CLI session, logs.json or checkpoint")
            document = _checkpoint(history, source, parsed)
            if document is not None:
                parsed.documents.append(document)
        return parsed


def _logs(entries: list[Any], source: SourceFile, parsed: ParsedFile) -> list[Any]:
    "logs.json: the prompts of each session that ``chats/`` does not hold."
    recorded = {p.name.rsplit("-", 1)[-1].split(".")[0] for p in _chats(source.path.parent)}
    sessions: dict[str, list[Message]] = {}
    for n, entry in enumerate(entries):
        if not isinstance(entry, dict) or not isinstance(entry.get("message"), str):
            parsed.skipped.append((f"[{n}]", "not a log entry with a message; the others are indexed"))
            continue
        session = str(entry.get("sessionId") or "")
        if session[:8] in recorded:
            continue
        role = "user" if entry.get("type", "user") == "user" else "assistant"
        sessions.setdefault(session, []).append(
            Message(role, entry["message"], as_date(entry.get("timestamp")))
        )
    documents = []
    for session, messages in sessions.items():
        prompts = [m.text for m in messages if not m.text.startswith("/")] or [messages[0].text]
        times = [m.time for m in messages if m.time]
        conv = Conversation(
            id=session or "logs",
            title=first_words(prompts[0]),
            platform="gemini-cli",
            messages=messages,
            created=min(times, default=None),
            updated=max(times, default=None),
            meta={"session": session} if session else {},
        )
        documents.append(to_document(conv, source, "gemini-cli"))
    return documents


def _chats(folder: Path) -> list[Path]:
    try:
        return [p for p in (folder / "chats").iterdir() if p.name.startswith("session-")]
    except OSError:
        return []


def _checkpoint(history: list[Any], source: SourceFile, parsed: ParsedFile) -> Any:
    "A /chat save checkpoint: the conversation's contents as the model was sent them."
    reader = GeminiCliReader()
    for n, content in enumerate(history):
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            parsed.skipped.append((f"[{n}]", "not a content object with parts; the others are indexed"))
            continue
        role = "user" if content.get("role") == "user" else "assistant"
        for part in content["parts"]:
            if not isinstance(part, dict):
                continue
            if isinstance(part.get("text"), str):
                reader.say(
                    "thinking" if part.get("thought") else role, trimmed(part["text"], TEXT_BYTES), None
                )
            elif isinstance(part.get("functionCall"), dict):
                call = part["functionCall"]
                reader.say("tool", trimmed(f"[{call.get('name', 'tool')}] {_shown(call.get('args'))}"), None)
            elif isinstance(part.get("functionResponse"), dict):
                response = part["functionResponse"].get("response")
                reader.say("tool", trimmed(f"[result] {_shown(response)}"), None)
    if not reader.messages:
        return None
    tag = source.path.stem.removeprefix("checkpoint-")
    prompts = [m.text for m in reader.messages if m.role == "user" and not m.text.startswith(("/", "<"))]
    conv = reader.conversation(f"checkpoint-{tag}")
    conv.title = f"checkpoint {tag}" + (f": {first_words(prompts[0])}" if prompts else "")
    return to_document(conv, source, "gemini-cli")


def project_of(path: Path, parsed: ParsedFile) -> str | None:
    """The project folder of a file under ``~/.gemini/tmp/<project>/``: its ``.project_root``,
    else the path in ``~/.gemini/projects.json`` whose SHA-256 is the session's projectHash."""
    for folder in list(path.parents)[:3]:
        marker = folder / ".project_root"
        try:
            if marker.is_file():
                return marker.read_text("utf-8").strip() or None
        except OSError:
            return None
    hashes = {d.meta.get("project_hash") for d in parsed.documents} - {None}
    for folder in list(path.parents)[2:5]:
        registry = folder / "projects.json"
        try:
            projects = (
                json.loads(registry.read_text("utf-8")).get("projects", {}) if registry.is_file() else None
            )
        except (OSError, ValueError, AttributeError):
            return None
        if isinstance(projects, dict):
            for project in projects:
                if hashlib.sha256(str(project).encode()).hexdigest() in hashes:
                    return str(project)
            return None
    return None
