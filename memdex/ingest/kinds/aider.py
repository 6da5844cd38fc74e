"""aider: Aider's chat history, ``.aider.chat.history.md`` at the root of a repository.

Found by its name (a markdown file named ``*chat.history*.md`` or ``*chat-history*.md``;
``--kind aider`` reads any other) and by what it holds: a ``# aider chat started at`` line.

Markdown that Aider appends to as it runs (aider/io.py):

- ``# aider chat started at 2025-07-15 11:38:37`` starts a session (local time): each is a
  document, keyed by its start. Lines before the first one (a history cut at its head) make
  a session of their own, undated.
- ``#### `` lines are what the person typed; ``> `` lines are Aider's own output (tool and
  status lines: tokens and cost, files added, edits applied, commits, shell output), kept as
  Tool lines, trimmed. Aider quotes only the first line of an output of many lines and ends
  every output with two spaces: the lines up to that end are its output too. Everything
  else is the model's reply, whose SEARCH/REPLACE edit blocks are Tool lines as well,
  trimmed (``sessions.TOOL_BYTES``).
- The title is the session's first request that is not a /command. Kept as meta: the Aider
  version and main model its start-up lines name, and the folder of a file named
  ``.aider.chat.history.md`` as the project (Aider writes it at the repository's root).
- Read on as it grows: new lines of the last session become new chunks of its document; a
  new session, or a session that had said nothing yet, reads the file whole. A line that is
  not UTF-8 is reported as ``path:line`` and read with replacement characters; a session
  start that is no date is reported and its session indexed undated.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from memdex.ingest.base import MB, SNIFF_BYTES, SourceFile, SourceKind
from memdex.ingest.chat import (
    Conversation,
    first_words,
    signals,
    to_document,
)
from memdex.ingest.sessions import (
    TEXT_BYTES,
    Appended,
    SessionReader,
    Tail,
    WholeReadNeeded,
    continued,
    tail_hash,
    trimmed,
)
from memdex.models import ParsedFile

START = "# aider chat started at "
_FENCE = re.compile(r"^(```|~~~)")
_MODEL = re.compile(r"^(?:Main model|Models?): (\S+)")
_VERSION = re.compile(r"^Aider (v\S+)")


def local_stamp(text: str) -> str | None:
    "Aider's start time (the machine's local time) as UTC ISO 8601, or None."
    try:
        moment = datetime.strptime(text.strip(), "%Y-%m-%d %H:%M:%S")
    except ValueError:
        return None
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class AiderSession(SessionReader):
    "One session's lines as messages: runs of lines of one kind (typed, Aider's, the reply)."

    platform = "aider"

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.role = ""
        self.lines: list[str] = []
        self.title_from = ""
        self.quoting = False  # in an output of many lines: until one ends with two spaces
        super().__init__(state)

    def resume(self, state: dict[str, Any]) -> None:
        super().resume(state)
        self.title_from = str(state.get("title_from", ""))
        self.quoting = bool(state.get("quoting"))

    def state(self) -> dict[str, Any]:
        return {**super().state(), "title_from": self.title_from, "quoting": self.quoting}

    def take(self, line: str) -> None:
        "One line of the session, with its trailing spaces (they end Aider's outputs)."
        if line.startswith("#### ") or line == "####":
            role, text = "user", line[5:].rstrip()
            self.quoting = False
        elif self.quoting:
            role, text = "tool", line.rstrip()
            self.quoting = not line.endswith("  ")
        elif line.startswith("> ") or line.rstrip() == ">":
            role, text = "tool", line[2:].rstrip()
            self.quoting = not line.endswith("  ")
            self._meta(text)
        else:
            role, text = "assistant", line
        if role != self.role:
            self.flush()
            self.role = role
        self.lines.append(text)

    def _meta(self, text: str) -> None:
        model, version = _MODEL.match(text), _VERSION.match(text)
        if model:
            self.meta["model"] = model.group(1)
        if version:
            self.meta["version"] = version.group(1)

    def flush(self) -> None:
        text = "\n".join(self.lines).strip()
        role, self.role, self.lines = self.role, "", []
        if not text or text == "<blank>":
            return
        if role == "user":
            self.say("user", trimmed(text, TEXT_BYTES), self.created)
            if self.title_from != "prompt" and not text.startswith("/"):
                self.title, self.title_from = first_words(text), "prompt"
            elif not self.title_from:
                self.title, self.title_from = first_words(text), "command"
        elif role == "tool":
            self.say("tool", trimmed(text), self.created)
        else:
            for said, piece in _reply(text):
                self.say(
                    "assistant" if said else "tool", trimmed(piece, TEXT_BYTES if said else 600), self.created
                )


def _reply(text: str) -> list[tuple[bool, str]]:
    "A reply cut into what was said and its edit blocks (fences holding ``<<<<<<< SEARCH``)."
    out: list[tuple[bool, list[str]]] = []
    fence: list[str] | None = None
    for line in text.split("\n"):
        if fence is None and _FENCE.match(line):
            fence = [line]
            continue
        if fence is not None:
            fence.append(line)
            if _FENCE.match(line) and len(fence) > 1:
                edit = any(x.startswith("<<<<<<< SEARCH") for x in fence)
                _add(out, not edit, ("[edit] " if edit else "") + "\n".join(fence))
                fence = None
            continue
        _add(out, True, line)
    if fence is not None:
        _add(out, not any(x.startswith("<<<<<<< SEARCH") for x in fence), "\n".join(fence))
    return [(said, "\n".join(lines).strip()) for said, lines in out if "\n".join(lines).strip()]


def _add(out: list[tuple[bool, list[str]]], said: bool, text: str) -> None:
    if out and out[-1][0] == said:
        out[-1][1].append(text)
    else:
        out.append((said, [text]))


class AiderKind(SourceKind):
    name = "aider"
    description = "Aider chat history: .aider.chat.history.md at a repository's root"
    max_bytes = 2048 * MB
    appendable = True
    record_separator = ":"

    def claims(self, rel_path: str) -> bool:
        """A markdown file named as Aider names its history (``.aider.chat.history.md``, or a
        ``chat-history.md``): any other markdown keeps the notes' size limit, unsniffed."""
        name = rel_path.rpartition("/")[2].lower()
        return name.endswith(".md") and ("chat.history" in name or "chat-history" in name)

    def sniff(self, data: bytes) -> bool:
        head = data[:SNIFF_BYTES].lstrip(b"\xef\xbb\xbf\r\n")
        return head.startswith(START.encode()) or b"\n" + START.encode() in head

    def _lines(self, source: SourceFile, first: int, skipped: list[tuple[str, str]]) -> tuple[list[str], int]:
        "The complete lines of ``source.data`` (a last one with no newline is still being written)."
        data = source.data
        end = data.rfind(b"\n") + 1
        lines = []
        for n, raw in enumerate(data[:end].split(b"\n")[:-1], first):
            try:
                lines.append(raw.decode("utf-8").rstrip("\r"))
            except UnicodeDecodeError:
                skipped.append((str(n), "not valid UTF-8; read with replacement characters"))
                lines.append(raw.decode("utf-8", "replace").rstrip("\r"))
        return lines, end

    def _start(
        self, line: str, number: int, source: SourceFile, skipped: list[tuple[str, str]]
    ) -> AiderSession:
        session = AiderSession()
        stamp = line[len(START) :].strip() if line.startswith(START) else ""
        session.created = session.updated = local_stamp(stamp) if stamp else None
        if stamp and session.created is None:
            skipped.append(
                (str(number), f"session start {stamp!r} is not a date; its session is indexed undated")
            )
        session.id = session.created or (f"line-{number}" if stamp else "start")
        if source.path.name == ".aider.chat.history.md":
            session.meta["project"] = str(source.path.parent)
        return session

    def parse(self, source: SourceFile) -> ParsedFile:
        parsed = ParsedFile(kind=self.name)
        lines, end = self._lines(source, 1, parsed.skipped)
        sessions = [self._start("", 1, source, parsed.skipped)]
        for number, line in enumerate(lines, 1):
            if line.startswith(START):
                sessions[-1].flush()
                sessions.append(self._start(line, number, source, parsed.skipped))
            else:
                sessions[-1].take(line)
        sessions[-1].flush()
        for session in sessions:
            if any(m.role in ("user", "assistant") for m in session.messages):
                parsed.documents.append(to_document(_conversation(session), source, self.name))
        last = sessions[-1]
        state = last.state()
        said = any(m.role in ("user", "assistant") for m in last.messages)
        state["chunks"] = len(parsed.documents[-1].chunks) if said and parsed.documents else 0
        state["signals"] = signals(last.messages)
        parsed.tail = Tail(end, len(lines), len(source.data), tail_hash(source.data[:end]), state)
        return parsed

    def parse_append(self, source: SourceFile, tail: Tail) -> Appended:
        skipped: list[tuple[str, str]] = []
        lines, end = self._lines(source, tail.lines + 1, skipped)
        session = AiderSession(tail.state)
        for line in lines:
            if line.startswith(START):
                raise WholeReadNeeded("a new session started")
            session.take(line)
        session.flush()
        if not tail.state.get("chunks") and any(m.role in ("user", "assistant") for m in session.messages):
            raise WholeReadNeeded("the session had said nothing: its document is written whole")
        conversation = _conversation(session)
        document, state = continued(
            self.name, "aider", session, conversation, source, tail, conversation.created
        )
        return Appended(document, tail.offset + end, tail.lines + len(lines), state, skipped)


def _conversation(session: AiderSession) -> Conversation:
    conv = session.conversation("start")
    if not session.title:
        conv.title = f"aider chat {session.created or ''}".strip()
    return conv
