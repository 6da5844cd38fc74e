"""claude-code: Claude Code session logs, ``~/.claude/projects/<munged-cwd>/<session>.jsonl``.

- ``user`` and ``assistant`` records are linked by ``parentUuid``; the conversation is the
  chain to the last leaf (across a compaction, through ``logicalParentUuid``), with the
  records that hang off it without starting a branch of their own -- the results of parallel
  tool calls. A prompt that rewound the conversation leaves the old branch out.
- Content blocks: ``text`` is what was said; ``tool_use``, ``tool_result`` and ``thinking``
  are kept, trimmed (``sessions.TOOL_BYTES``); an image is ``[image]``.
- The title is a ``summary`` line's (the one whose leaf is in this file, else the last), else
  the first real prompt: not a command, not a shell line, not a subagent's "Warmup".
- ``isSidechain`` records (a Task subagent inside the file, CLI < 2.0) are kept, marked
  ``[subagent]``. A file of sidechain records only (``<session>/subagents/agent-*.jsonl``, or
  an ``agent-*.jsonl`` beside the sessions) is a document of its own, keyed
  ``<session>/agent-<id>`` and titled ``subagent: <its prompt>``; a Warmup-only one is none.
- Kept as meta: ``cwd`` (the project), ``gitBranch``, ``version``, the model, compactions.
  A compaction's summary is kept as a System message; its boundary is counted.
- Bookkeeping is skipped: file-history-snapshot, progress, permission-mode, last-prompt,
  attachment, turn_duration and hook ``system`` lines. Caveats and local command lines
  (``<bash-stdout>``, ``<local-command-stdout>``, ``<command-name>``) are Shell lines.
"""

from __future__ import annotations

import re
from typing import Any

from memdex.ingest.base import SNIFF_BYTES
from memdex.ingest.chat import Conversation, first_words
from memdex.ingest.sessions import (
    TEXT_BYTES,
    Line,
    SessionKind,
    SessionReader,
    WholeReadNeeded,
    call_text,
    trimmed,
)
from memdex.utils import as_date

RECENT = 64  # uuids a resumed reader remembers: a new record's parent is among them
MESSAGE_TYPES = ("user", "assistant", "system")
_SHELL_TAGS = re.compile(
    r"</?(bash-input|bash-stdout|bash-stderr|local-command-stdout|local-command-stderr"
    r"|command-name|command-message|command-args|command-contents|local-command-caveat)>"
)
_TITLE_NOISE = re.compile(r"<(ide_[a-z_]+|system-reminder)>.*?</\1>", re.S)
_SHELL_MARK = re.compile(
    r"<(bash-input|bash-stdout|bash-stderr|local-command-stdout|local-command-caveat|command-name)>"
)


class ClaudeCodeReader(SessionReader):
    platform = "claude-code"

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.resumed = state is not None
        self.records: list[dict[str, Any]] = []
        self.summaries: list[dict[str, Any]] = []
        self.recent: dict[str, int] = {}
        self.position = 0
        self.last_prompt = -1
        self.title_from = ""
        super().__init__(state)

    def resume(self, state: dict[str, Any]) -> None:
        super().resume(state)
        self.recent = dict(state.get("recent", {}))
        self.position = int(state.get("position", 0))
        self.last_prompt = int(state.get("last_prompt", -1))
        self.title_from = str(state.get("title_from", ""))

    def state(self) -> dict[str, Any]:
        recent = sorted(self.recent.items(), key=lambda kv: kv[1])[-RECENT:]
        return {
            **super().state(),
            "recent": dict(recent),
            "position": self.position,
            "last_prompt": self.last_prompt,
            "title_from": self.title_from,
        }

    # -- reading -------------------------------------------------------------------------
    def feed(self, line: Line) -> None:
        record = line.record
        kind = record.get("type")
        if kind == "summary":
            if self.resumed:
                if self.title_from != "summary" and isinstance(record.get("summary"), str):
                    self.title, self.title_from = record["summary"].strip(), "summary"
            else:
                self.summaries.append(record)
            return
        if not isinstance(record.get("uuid"), str):
            return  # snapshots, permission modes, last prompts: bookkeeping outside the chain
        if self.resumed:
            self._follow(record)
        else:
            self.records.append(record)

    def _follow(self, record: dict[str, Any]) -> None:
        "A record appended to a session already read: it must continue the conversation."
        self.position += 1
        if record.get("isSidechain"):
            self._take(record)
            return
        parent = _parent(record)
        said = record.get("type") in ("user", "assistant")
        if said and parent is not None and parent not in self.recent:
            raise WholeReadNeeded(f"record {record['uuid']} follows one not read")
        if parent in self.recent and _is_prompt(record) and self.recent[parent] < self.last_prompt:
            raise WholeReadNeeded("the conversation was rewound")
        self.recent[record["uuid"]] = self.position
        if len(self.recent) > 2 * RECENT:
            self.recent = dict(sorted(self.recent.items(), key=lambda kv: kv[1])[-RECENT:])
        self._take(record)

    def finish(self) -> None:
        "A whole read: the chain to the last leaf, and what hangs off it."
        by_uuid = {r["uuid"]: r for r in self.records}
        main = [r for r in self.records if not r.get("isSidechain")]
        leaves = [r for r in main if r.get("type") in ("user", "assistant")]
        chain: set[str] = set()
        node = leaves[-1] if leaves else None
        while node is not None and node["uuid"] not in chain:
            chain.add(node["uuid"])
            node = by_uuid.get(_parent(node) or "")
        included = set(chain)
        for record in main:
            if record["uuid"] not in included and _parent(record) in included and not _is_prompt(record):
                included.add(record["uuid"])
        for record in self.records:
            self.position += 1
            if record.get("isSidechain") or record["uuid"] in included:
                if not record.get("isSidechain"):
                    self.recent[record["uuid"]] = self.position
                self._take(record)
        self.recent = dict(sorted(self.recent.items(), key=lambda kv: kv[1])[-RECENT:])
        self._title(by_uuid)
        if self.meta.get("subagent") and all(
            m.role != "user" or m.text.strip() in ("Warmup", "[subagent] Warmup") for m in self.messages
        ):
            self.messages = []  # a warmup: nothing was asked

    def _title(self, by_uuid: dict[str, dict[str, Any]]) -> None:
        texts = [s for s in self.summaries if isinstance(s.get("summary"), str) and s["summary"].strip()]
        own = [s for s in texts if s.get("leafUuid") in by_uuid]
        chosen = (own or texts)[-1:] if texts else []
        if chosen:
            self.title, self.title_from = chosen[0]["summary"].strip(), "summary"

    # -- one record ----------------------------------------------------------------------
    def _take(self, record: dict[str, Any]) -> None:
        self.id = self.id or str(record.get("sessionId") or "")
        self._meta(record)
        time = as_date(record.get("timestamp"))
        sidechain = bool(record.get("isSidechain"))
        prompt = _is_prompt(record)
        for role, text in _messages(record) if record.get("type") in MESSAGE_TYPES else ():
            if sidechain:
                text = f"[subagent] {text}"
            self.say(role, text, time)
        if prompt:
            self.last_prompt = self.position
        self._consider_title(record, prompt, sidechain)

    def _consider_title(self, record: dict[str, Any], prompt: bool, sidechain: bool) -> None:
        """The first real prompt names the session; until one comes, the first command or
        injected prompt of the session does, and a subagent's prompt only its own file."""
        if record.get("type") != "user" or self.title_from in ("summary", "prompt"):
            return
        text = _TITLE_NOISE.sub(" ", _said(record)).strip()
        if not text or text == "Warmup" or record.get("isCompactSummary"):
            return
        if prompt and not sidechain:
            self.title, self.title_from = first_words(text), "prompt"
        elif not sidechain and self.title_from in ("", "sidechain"):
            self.title, self.title_from = first_words(_SHELL_TAGS.sub(" ", text)), "command"
        elif sidechain and prompt and not self.title_from:
            self.title, self.title_from = "subagent: " + first_words(text), "sidechain"

    def _meta(self, record: dict[str, Any]) -> None:
        meta = self.meta
        for field, name in (("cwd", "project"), ("gitBranch", "branch"), ("version", "version")):
            value = record.get(field)
            if isinstance(value, str) and value:
                meta[name] = value
        message = record.get("message")
        if isinstance(message, dict) and isinstance(message.get("model"), str):
            if not message["model"].startswith("<"):
                meta["model"] = message["model"]
        if record.get("subtype") == "compact_boundary":
            meta["compactions"] = int(meta.get("compactions", 0)) + 1
        if record.get("isSidechain"):
            meta["sidechain_records"] = int(meta.get("sidechain_records", 0)) + 1
        if not self.messages and record.get("isSidechain") and _parent(record) is None:
            meta["subagent"] = True
            agent = record.get("agentId")
            if agent:
                meta["agent_id"] = str(agent)
        if meta.get("subagent") and not record.get("isSidechain"):
            meta.pop("subagent", None)  # sidechains inside a session file, not a subagent's own

    def conversation(self, fallback_id: str) -> Conversation:
        conv = super().conversation(fallback_id)
        if self.meta.get("subagent"):
            agent = self.meta.get("agent_id") or fallback_id.removeprefix("agent-")
            conv.id = f"{conv.id}/agent-{agent}" if conv.id else fallback_id
            self.meta["session"] = self.id
        return conv


def _parent(record: dict[str, Any]) -> str | None:
    parent = record.get("parentUuid") or record.get("logicalParentUuid")
    return parent if isinstance(parent, str) else None


def _content(record: dict[str, Any]) -> Any:
    message = record.get("message")
    return message.get("content") if isinstance(message, dict) else None


def _said(record: dict[str, Any]) -> str:
    "What a user record says in words (no tool results)."
    content = _content(record)
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n\n".join(
            str(b.get("text") or "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    return ""


def _is_prompt(record: dict[str, Any]) -> bool:
    "A prompt the person typed: a user record in words, not a tool result, command or caveat."
    if record.get("type") != "user" or record.get("isMeta") or record.get("isCompactSummary"):
        return False
    text = _said(record).strip()
    return bool(text) and not _is_shell(text)


def _is_shell(text: str) -> bool:
    return text.startswith("Caveat:") or bool(_SHELL_MARK.search(text))


def _shell(text: str) -> str:
    text = re.sub(r"<bash-input>(.*?)</bash-input>", r"$ \1", text, flags=re.S)
    return trimmed(_SHELL_TAGS.sub("", text))


def _messages(record: dict[str, Any]) -> list[tuple[str, str]]:
    "One record as (role, text) messages, in order."
    kind = record.get("type")
    if kind == "system":
        if record.get("subtype") == "away_summary" and isinstance(record.get("content"), str):
            return [("system", f"[recap] {record['content']}")]
        return []  # hook lines, turn durations, compaction boundaries (counted in meta)
    content = _content(record)
    if record.get("isCompactSummary"):
        return [("system", "[compaction summary] " + trimmed(_said(record), TEXT_BYTES))]
    if isinstance(content, str):
        content = [{"type": "text", "text": content}]
    if not isinstance(content, list):
        return []
    out: list[tuple[str, str]] = []
    for block in content:
        if not isinstance(block, dict):
            continue
        part = block.get("type")
        if part == "text" and isinstance(block.get("text"), str):
            text = block["text"]
            if kind == "user" and _is_shell(text):
                out.append(("shell", _shell(text)))
            else:
                out.append((str(kind), trimmed(text, TEXT_BYTES)))
        elif part == "image":
            out.append((str(kind), "[image]"))
        elif part == "thinking" and isinstance(block.get("thinking"), str):
            out.append(("thinking", trimmed(block["thinking"])))
        elif part == "tool_use":
            out.append(("tool", trimmed(f"[{block.get('name', 'tool')}] {_shown(block.get('input'))}")))
        elif part == "tool_result":
            error = "[error] " if block.get("is_error") else ""
            out.append(("tool", trimmed(f"[result] {error}{_result_text(block.get('content'))}")))
    merged: list[tuple[str, str]] = []
    for role, text in out:  # one record's text blocks are one message
        if merged and merged[-1][0] == role and role in ("user", "assistant"):
            merged[-1] = (role, f"{merged[-1][1]}\n\n{text}")
        else:
            merged.append((role, text))
    return merged


# What a tool call's arguments are shown by, first found first (sessions.call_text).
_CALL_KEYS = ("command", "file_path", "pattern", "url", "query", "description", "prompt")


def _shown(arguments: Any) -> str:
    return call_text(arguments, _CALL_KEYS)


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict):
                if block.get("type") == "text":
                    parts.append(str(block.get("text") or ""))
                elif block.get("type") == "image":
                    parts.append("[image]")
                elif block.get("type") == "tool_reference":
                    parts.append(f"[tool: {block.get('tool_name', '')}]")
        return "\n".join(parts)
    return ""


class ClaudeCodeKind(SessionKind):
    name = "claude-code"
    description = "Claude Code session log: ~/.claude/projects/<project>/<session>.jsonl"
    reader = ClaudeCodeReader
    locations = ("$CLAUDE_CONFIG_DIR/projects | ~/.claude/projects",)

    def sniff(self, data: bytes) -> bool:
        head = data[:SNIFF_BYTES]
        return b'"sessionId"' in head or (b'"type":"summary"' in head and b'"leafUuid"' in head)
