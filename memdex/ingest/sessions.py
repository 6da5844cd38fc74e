"""What the coding agents' session logs share: JSONL files that grow line by line.

- One line is one record. A line that is not JSON is reported as ``file:line`` with why, and
  the lines after it are still read. A last line with no newline that is not JSON yet is a
  line being written: it is left for the next read, not reported.
- A session is read whole once. When the file only grew (its indexed prefix is unchanged, by
  a hash of the prefix's last ``TAIL_BYTES``), only the new bytes are read: a reader resumed
  from the state saved with the file takes the new records, and their messages become new
  chunks of the same document. The work is in proportion to what was appended. Anything the
  reader cannot follow from where it stopped (a rewound conversation, a record whose parent
  it has not seen) reads the file whole again, as does growth past ``WHOLE_READ_GROWTH``
  times the size last read whole -- which keeps topics and chunk boundaries those of a whole
  read at an amortised cost still linear in the appended bytes.
- Tool calls, tool output and reasoning are kept but trimmed to ``TOOL_BYTES`` (head and
  tail), an image to ``[image]``: a multi-megabyte output never drowns what was said.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from memdex.ingest.base import MB, Appended, SourceFile, SourceKind, Tail
from memdex.ingest.chat import (
    DEFAULT_CHAT_TOKENS,
    Conversation,
    Message,
    chunk_messages,
    signals,
    to_document,
)
from memdex.models import Document, ParsedFile

TAIL_BYTES = 4096  # the indexed prefix is recognised by the hash of its last 4 KB
WHOLE_READ_GROWTH = 2  # past twice the size last read whole, read it whole again
TOOL_BYTES = 600  # a tool call, its output or a reasoning block keeps this much: head and tail
TEXT_BYTES = 64 * 1024  # a single said message keeps this much (a pasted log, a base64 blob)

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


class WholeReadNeeded(Exception):
    "The appended records do not continue the conversation as read: read the file whole."


def trimmed(text: str, limit: int = TOOL_BYTES) -> str:
    "``text`` cut to about ``limit`` bytes: its head and tail, saying how much went."
    text = _ANSI.sub("", text).strip()
    size = len(text.encode("utf-8"))
    if size <= limit:
        return text
    head, tail = text[: limit * 2 // 3], text[-(limit // 3) :]
    return f"{head.rstrip()} … [{size - limit:,} bytes trimmed] … {tail.lstrip()}"


@dataclass
class Line:
    number: int  # 1-based
    record: dict[str, Any]


@dataclass
class Lines:
    "The complete lines of some bytes of a JSONL file, from a line number on."

    lines: list[Line] = field(default_factory=list)
    broken: list[tuple[str, str]] = field(default_factory=list)  # (line number, why)
    end: int = 0  # bytes consumed: up to and including the last complete line
    count: int = 0  # lines consumed


def read_lines(data: bytes, first_line: int = 1) -> Lines:
    """Split JSONL bytes into records. A line that is not a JSON object is reported; a last
    line with no newline that is not JSON yet is being written, so it is left unread."""
    out = Lines()
    start = 0
    number = first_line - 1
    while start < len(data):
        newline = data.find(b"\n", start)
        last = newline < 0
        stop = len(data) if last else newline
        raw = data[start:stop]
        number += 1
        try:
            record = json.loads(raw) if raw.strip() else None
        except (ValueError, RecursionError) as exc:
            if last:  # torn: mid-write
                break
            out.broken.append((str(number), f"not valid JSON ({_reason(exc)}); the other lines are indexed"))
            record = None
        if record is not None and not isinstance(record, dict):
            out.broken.append((str(number), "not a JSON object; the other lines are indexed"))
            record = None
        if record is not None:
            out.lines.append(Line(number, record))
        start = stop + 1
        out.end = min(start, len(data))
        out.count = number - first_line + 1
    return out


def _reason(exc: Exception) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    return "nested too deeply" if isinstance(exc, RecursionError) else str(exc)


class SessionReader:
    """Turns a session's records into a conversation, record by record, and can stop and
    resume: ``state()`` is what it needs to go on from where it stopped (small, JSON)."""

    platform = ""

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.messages: list[Message] = []
        self.count = 0  # messages before this reader's (a resumed reader counts on)
        self.meta: dict[str, Any] = {}
        self.id = ""
        self.title = ""
        self.created: str | None = None
        self.updated: str | None = None
        if state:
            self.resume(state)

    def resume(self, state: dict[str, Any]) -> None:
        self.count = int(state.get("count", 0))
        self.meta = dict(state.get("meta", {}))
        self.id = str(state.get("id", ""))
        self.title = str(state.get("title", ""))
        self.created = state.get("created")
        self.updated = state.get("updated")

    def state(self) -> dict[str, Any]:
        return {
            "count": self.count + len(self.messages),
            "meta": self.meta,
            "id": self.id,
            "title": self.title,
            "created": self.created,
            "updated": self.updated,
        }

    def feed(self, line: Line) -> None:  # pragma: no cover - every kind implements it
        raise NotImplementedError

    def finish(self) -> None:
        "Called after the last record of a whole read."

    def say(self, role: str, text: str, time: str | None) -> None:
        if text.strip():
            self.messages.append(Message(role=role, text=text.strip(), time=time))
            if time:
                self.created = self.created or time
                self.updated = max(self.updated or time, time)

    def conversation(self, fallback_id: str) -> Conversation:
        return Conversation(
            id=self.id or fallback_id,
            title=self.title or "untitled session",
            platform=self.platform,
            messages=self.messages,
            created=self.created,
            updated=self.updated,
            meta=self.meta,
        )


def call_text(arguments: Any, keys: tuple[str, ...], json_text: bool = False) -> str:
    """A tool call's arguments as one line: the first of ``keys`` that holds a string (the
    command, the path, the query...), then the rest as JSON; else all of it as JSON. With
    ``json_text``, arguments given as a JSON string (OpenAI-style calls) are read first."""
    if json_text and isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except ValueError:
            return arguments
    if isinstance(arguments, dict):
        for key in keys:
            value = arguments.get(key)
            if isinstance(value, str):
                rest = {k: v for k, v in arguments.items() if k != key}
                return value + (f" {json.dumps(rest, ensure_ascii=False)}" if rest else "")
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def tail_hash(prefix: bytes) -> str:
    "What recognises an indexed prefix: the SHA-256 of its last ``TAIL_BYTES``."
    return hashlib.sha256(prefix[-TAIL_BYTES:]).hexdigest()


class SessionKind(SourceKind):
    "A coding agent's session log: JSONL, one session per file, read on as it grows."

    max_bytes = 2048 * MB
    suffixes: tuple[str, ...] = (".jsonl",)
    appendable = True
    record_separator = ":"
    session_log = True
    reader: type[SessionReader] = SessionReader

    def claims(self, rel_path: str) -> bool:
        return rel_path.lower().endswith(".jsonl")

    def parse(self, source: SourceFile) -> ParsedFile:
        "The whole file; the tail it returns lets the next read go on from its end."
        lines = read_lines(source.data)
        reader = self.reader()
        for line in lines.lines:
            reader.feed(line)
        reader.finish()
        parsed = ParsedFile(kind=self.name, skipped=list(lines.broken))
        state = reader.state()
        if reader.messages:
            document = to_document(reader.conversation(source.path.stem), source, self.name)
            parsed.documents.append(document)
            state["chunks"] = len(document.chunks)
            state["signals"] = signals(reader.messages)
        head = source.data[: lines.end]
        parsed.tail = Tail(lines.end, lines.count, len(source.data), tail_hash(head), state)
        return parsed

    def parse_append(self, source: SourceFile, tail: Tail) -> Appended:
        """Read ``source.data`` -- the bytes after ``tail.offset`` -- on from ``tail``'s state.
        Raises WholeReadNeeded when the new records do not simply continue the session."""
        lines = read_lines(source.data, tail.lines + 1)
        reader = self.reader(tail.state)
        for line in lines.lines:
            reader.feed(line)
        if reader.messages and not tail.state.get("chunks"):
            raise WholeReadNeeded("the session had no messages: its document is written whole")
        conversation = reader.conversation(source.path.stem)
        date = conversation.updated or conversation.created
        document, state = continued(self.name, self.reader.platform, reader, conversation, source, tail, date)
        return Appended(document, tail.offset + lines.end, tail.lines + lines.count, state, lines.broken)


def continued(
    kind: str,
    platform: str,
    reader: SessionReader,
    conversation: Conversation,
    source: SourceFile,
    tail: Tail,
    date: str | None,
) -> tuple[Document, dict[str, Any]]:
    """The document of what a session said since ``tail`` (its chunks numbered on from the
    tail's), and the state the next read goes on from."""
    bound = (source.chunk_tokens or DEFAULT_CHAT_TOKENS) * 4
    chunks = chunk_messages(reader.messages, conversation.title, bound, first=reader.count)
    state = reader.state()
    state["chunks"] = int(tail.state.get("chunks", 0)) + len(chunks)
    known = tail.state.get("signals", {})
    state["signals"] = {k: bool(known.get(k)) or v for k, v in signals(reader.messages).items()}
    meta = {
        **reader.meta,
        "message_count": state["count"],
        "chunk_count": state["chunks"],
        **state["signals"],
    }
    document = Document(
        key=conversation.id,
        kind=kind,
        title=conversation.title,
        chunks=chunks,
        size_bytes=sum(len(m.text.encode("utf-8")) for m in reader.messages),
        platform=platform,
        date=date,
        created=conversation.created,
        modified=conversation.updated,
        meta=meta,
    )
    return document, state


def first_text(blocks: Any) -> str:
    "The text of a message's content: a string, or the text blocks of a list."
    if isinstance(blocks, str):
        return blocks
    if isinstance(blocks, list):
        return "\n\n".join(
            str(b.get("text") or "")
            for b in blocks
            if isinstance(b, dict) and b.get("type") in ("text", "input_text", "output_text")
        )
    return ""
