"""opencode: OpenCode sessions, ``~/.local/share/opencode/storage/`` (OpenCode before 1.2).

One conversation is spread over many JSON files: ``session/<project>/<ses>.json`` (title,
``directory``, times, ``parentID``), ``message/<ses>/<msg>.json`` (role, times, model, error;
no text) and ``part/<msg>/<prt>.json`` (the text, reasoning, tool calls...; an older tree
kept the parts in ``part/`` itself, each naming its ``messageID``).

- A session is one document. Its folder ``message/<ses>/`` stands for it (an aggregate zone,
  ``SourceKind.aggregate``): its first message file is the manifest, and any change in the
  folder reads the whole session again -- from all three trees. OpenCode writes a message
  file when a prompt is sent and again when each reply completes, so a session is read when
  each reply is done; the parts it streams in between are read with it. The folders of the
  other trees (``part/``, ``session/``...) are read only through their sessions.
- Parts: ``text`` is what was said (a ``synthetic`` one, which OpenCode writes for the model,
  is a Tool line); ``reasoning`` is Thinking; ``tool`` is its name and input, then its
  output or error, trimmed (``sessions.TOOL_BYTES``); ``file`` is ``[attachment: name]``;
  ``patch`` the files it changed; ``compaction`` is counted; step marks are left out. A
  reply that failed says its error as a System line.
- Title: the session's, unless it is OpenCode's placeholder ("New session - <date>"): then
  the first prompt. Kept as meta: the session id, its folder (the project), the version,
  the model and provider, and the parent of a subagent's session.
- A file that is not JSON is reported as ``<manifest>#<file under storage/>``; the rest of
  the session is indexed. OpenCode 1.2 and later keep the same objects in ``opencode.db``
  (SQLite), read by ``kinds.opencode_db`` into the same documents (``conversation``).
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memdex.ingest.base import MB, SNIFF_BYTES, SourceFile, SourceKind
from memdex.ingest.chat import Conversation, Message, first_words, to_document
from memdex.ingest.sessions import TEXT_BYTES, call_text, trimmed
from memdex.models import ParsedFile
from memdex.utils import as_date

_PLACEHOLDER = re.compile(r"^(New|Child) session - \d{4}-\d\d-\d\d")
_MANIFESTS: dict[Path, tuple[int, Path | None]] = {}  # zone -> (its mtime, its first message file)


def is_storage(folder: Path) -> bool:
    "OpenCode's storage folder: it holds session/ and message/."
    return (folder / "message").is_dir() and (folder / "session").is_dir()


def _epoch(value: Any) -> str | None:
    return as_date(value / 1000) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


class OpenCodeKind(SourceKind):
    name = "opencode"
    description = "OpenCode session: ~/.local/share/opencode/storage/ (session, message and part JSON files)"
    max_bytes = 64 * MB
    suffixes = (".json",)
    aggregate = True
    record_separator = "#"
    locations = ("$XDG_DATA_HOME/opencode/storage | ~/.local/share/opencode/storage",)

    def claims_root(self, root: Path) -> bool:
        "A session's message folder; or a folder of storage/ that its sessions read."
        parent = root.parent
        if parent.name == "message":
            return is_storage(parent.parent)
        return root.name != "message" and is_storage(parent)

    def manifest(self, zone: Path) -> Path | None:
        "A session's first message file (ids sort by time); none for the other folders."
        if zone.parent.name != "message":
            return None
        try:
            mtime = zone.stat().st_mtime_ns
        except OSError:
            return None
        known = _MANIFESTS.get(zone)
        if known is None or known[0] != mtime:
            try:
                files = sorted(e.name for e in os.scandir(zone) if e.name.endswith(".json") and e.is_file())
            except OSError:
                files = []
            known = (mtime, zone / files[0] if files else None)
            if len(_MANIFESTS) > 4096:
                _MANIFESTS.clear()
            _MANIFESTS[zone] = known
        return known[1]

    def sniff(self, data: bytes) -> bool:
        head = data[:SNIFF_BYTES]
        return b'"sessionID"' in head and b'"role"' in head

    def parse(self, source: SourceFile) -> ParsedFile:
        zone = source.root if source.root.parent.name == "message" else source.path.parent
        storage = zone.parent.parent
        parsed = ParsedFile(kind=self.name)
        if zone.parent.name != "message" or not is_storage(storage):
            return parsed  # forced on a file outside a session's folder (--kind)
        session = Session(storage, zone.name, parsed)
        conversation = session.read()
        if conversation is not None:
            parsed.documents.append(to_document(conversation, source, self.name))
        return parsed


class Session:
    "One session read from the three trees of a storage folder."

    def __init__(self, storage: Path, ident: str, parsed: ParsedFile) -> None:
        self.storage = storage
        self.id = ident
        self.parsed = parsed
        self.flat: dict[str, list[dict[str, Any]]] | None = None  # the older tree's parts, by message

    def _json(self, path: Path) -> Any:
        try:
            return json.loads(path.read_bytes())
        except OSError:
            return None  # gone since it was listed: OpenCode rewrote or removed it
        except (ValueError, RecursionError) as exc:
            where = path.relative_to(self.storage).as_posix()
            self.parsed.skipped.append((where, f"not valid JSON ({exc}); the rest of the session is indexed"))
            return None

    def _files(self, folder: Path) -> list[Path]:
        try:
            return sorted(p for p in folder.iterdir() if p.suffix == ".json" and p.is_file())
        except OSError:
            return []

    def info(self) -> dict[str, Any]:
        try:
            folders = [p for p in (self.storage / "session").iterdir() if p.is_dir()]
        except OSError:
            folders = []
        for folder in folders:
            for name in (f"{self.id}.json", f"ses_{self.id}.json"):  # the second: a test tree's
                if (folder / name).is_file():
                    data = self._json(folder / name)
                    return data if isinstance(data, dict) else {}
        return {}

    def parts(self, message: str) -> list[dict[str, Any]]:
        folder = self.storage / "part" / message
        if folder.is_dir():
            found = [self._json(p) for p in self._files(folder)]
            return [p for p in found if isinstance(p, dict)]
        if self.flat is None:  # the older tree: every part in part/, naming its message
            self.flat = {}
            for path in self._files(self.storage / "part"):
                part = self._json(path)
                if isinstance(part, dict) and isinstance(part.get("messageID"), str):
                    self.flat.setdefault(part["messageID"], []).append(part)
        return self.flat.get(message, [])

    def read(self) -> Conversation | None:
        messages: list[dict[str, Any]] = []
        for path in self._files(self.storage / "message" / self.id):
            data = self._json(path)
            if isinstance(data, dict):
                data.setdefault("id", path.stem)
                messages.append(data)
        return conversation(self.id, self.info(), messages, self.parts)


def conversation(
    ident: str,
    info: dict[str, Any],
    messages: list[dict[str, Any]],
    parts_of: Callable[[str], list[dict[str, Any]]],
) -> Conversation | None:
    """One session as a conversation, from OpenCode's own objects, whichever layout kept them
    (this tree, or opencode.db: ``kinds.opencode_db``): its info (title, directory, version,
    parentID, time), its messages' info (each with its ``id``) and each message's parts."""
    messages = sorted(messages, key=lambda m: ((m.get("time") or {}).get("created") or 0, str(m["id"])))
    meta: dict[str, Any] = {"session": ident}
    said: list[Message] = []
    for message in messages:
        said += _message(message, parts_of(str(message["id"])), meta)
    if not said:
        return None
    for field, name in (("directory", "project"), ("version", "version"), ("parentID", "parent_session")):
        if isinstance(info.get(field), str) and info[field]:
            meta[name] = info[field]
    title = str(info.get("title") or "")
    if not title or _PLACEHOLDER.match(title):
        prompts = [m.text for m in said if m.role == "user" and not m.text.startswith("[attachment")]
        asked = [_summary_title(m) for m in messages if m.get("role") == "user"]
        title = first_words(prompts[0]) if prompts else next((t for t in asked if t), "untitled session")
    if meta.get("parent_session") and not title.startswith("subagent: "):
        title = f"subagent: {title}"
    times: dict[str, Any] = info["time"] if isinstance(info.get("time"), dict) else {}
    stamps = [m.time for m in said if m.time]
    return Conversation(
        id=ident,
        title=title,
        platform="opencode",
        messages=said,
        created=_epoch(times.get("created")) or min(stamps, default=None),
        updated=_epoch(times.get("updated")) or max(stamps, default=None),
        meta=meta,
    )


def _message(message: dict[str, Any], parts: list[dict[str, Any]], meta: dict[str, Any]) -> list[Message]:
    role = "user" if message.get("role") == "user" else "assistant"
    time = _epoch((message.get("time") or {}).get("created"))
    model = message.get("modelID") or (message.get("model") or {}).get("modelID")
    provider = message.get("providerID") or (message.get("model") or {}).get("providerID")
    if isinstance(model, str) and model:
        meta["model"] = model
    if isinstance(provider, str) and provider:
        meta["provider"] = provider
    out: list[Message] = []
    for part in parts:
        out += _part(part, role, time, meta)
    error = message.get("error")
    if isinstance(error, dict):
        data: dict[str, Any] = error["data"] if isinstance(error.get("data"), dict) else {}
        out.append(
            Message("system", trimmed(f"[error] {data.get('message') or error.get('name') or ''}"), time)
        )
    return [m for m in out if m.text.strip()]


def _summary_title(message: dict[str, Any]) -> str:
    "The title OpenCode gave a prompt (``summary.title``), when its text is not in a part."
    summary = message.get("summary")
    title = summary.get("title") if isinstance(summary, dict) else None
    return title if isinstance(title, str) else ""


def _part(part: dict[str, Any], role: str, time: str | None, meta: dict[str, Any]) -> list[Message]:
    kind = part.get("type")
    when = _epoch((part.get("time") or {}).get("start")) or time
    if kind == "text" and isinstance(part.get("text"), str):
        if part.get("synthetic"):
            return [Message("tool", trimmed(part["text"]), when)]
        return [Message(role, trimmed(part["text"], TEXT_BYTES), when)]
    if kind == "reasoning" and isinstance(part.get("text"), str):
        return [Message("thinking", trimmed(part["text"]), when)]
    if kind == "tool":
        state: dict[str, Any] = part["state"] if isinstance(part.get("state"), dict) else {}
        out = [Message("tool", trimmed(f"[{part.get('tool', 'tool')}] {_shown(state.get('input'))}"), when)]
        if isinstance(state.get("output"), str):
            out.append(Message("tool", trimmed(f"[result] {state['output']}"), when))
        elif state.get("status") == "error":
            out.append(Message("tool", trimmed(f"[result] [error] {state.get('error') or ''}"), when))
        return out
    if kind == "file":
        return [Message(role, f"[attachment: {part.get('filename') or part.get('url') or 'file'}]", when)]
    if kind == "patch" and isinstance(part.get("files"), list):
        return [Message("tool", trimmed("[patch] " + " ".join(str(f) for f in part["files"])), when)]
    if kind in ("agent", "subtask"):
        return [
            Message("tool", trimmed(f"[{kind}] {part.get('name') or part.get('description') or ''}"), when)
        ]
    if kind == "compaction":
        meta["compactions"] = int(meta.get("compactions", 0)) + 1
    return []


# What a tool call's arguments are shown by, first found first (sessions.call_text).
_CALL_KEYS = ("command", "filePath", "path", "pattern", "query", "url", "prompt", "description")


def _shown(arguments: Any) -> str:
    return call_text(arguments, _CALL_KEYS)
