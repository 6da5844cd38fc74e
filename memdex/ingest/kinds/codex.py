"""codex: Codex CLI rollouts, ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``.

- ``session_meta`` gives the id, cwd (the project), git branch and commit, cli_version and
  originator; ``turn_context`` the model.
- ``response_item``: ``message`` (user and assistant; ``developer`` messages and the
  environment context, AGENTS.md and permission instructions the CLI sends as user messages
  are not the conversation), ``function_call`` / ``custom_tool_call`` and their outputs,
  ``web_search_call`` and ``reasoning`` summaries, trimmed (``sessions.TOOL_BYTES``).
- ``event_msg``: ``user_message`` and ``agent_message`` repeat the response items; they are
  taken only when no response item said the same (older rollouts have only events).
  Reasoning events, token counts and command ends repeat what is kept already.
- The older format (2025 spring, before the envelope): a first line with ``id`` and
  ``timestamp``, then bare response items, and ``record_type: state`` lines.
- The title is the first real prompt.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from memdex.ingest.base import SNIFF_BYTES
from memdex.ingest.chat import first_words
from memdex.ingest.sessions import TEXT_BYTES, Line, SessionKind, SessionReader, first_text, trimmed
from memdex.utils import as_date

RECENT = 32  # message texts remembered to tell an event from the response item it repeats
NOT_SAID = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<permissions instructions>",
    "<user_shell_command>",
)


class CodexReader(SessionReader):
    platform = "codex"

    def __init__(self, state: dict[str, Any] | None = None) -> None:
        self.said: list[str] = []  # hashes of recent (role, text), items and events alike
        super().__init__(state)

    def resume(self, state: dict[str, Any]) -> None:
        super().resume(state)
        self.said = list(state.get("said", []))

    def state(self) -> dict[str, Any]:
        return {**super().state(), "said": self.said[-RECENT:]}

    def feed(self, line: Line) -> None:
        record = line.record
        time = as_date(record.get("timestamp"))
        kind = record.get("type")
        payload = record.get("payload")
        if kind == "session_meta" and isinstance(payload, dict):
            self._session(payload)
        elif kind == "turn_context" and isinstance(payload, dict):
            if isinstance(payload.get("model"), str):
                self.meta["model"] = payload["model"]
            if isinstance(payload.get("cwd"), str):
                self.meta.setdefault("project", payload["cwd"])
        elif kind == "response_item" and isinstance(payload, dict):
            self._item(payload, time, event=False)
        elif kind == "event_msg" and isinstance(payload, dict):
            self._event(payload, time)
        elif kind == "compacted" and isinstance(payload, dict):
            self.meta["compactions"] = int(self.meta.get("compactions", 0)) + 1
        elif "record_type" in record:
            return  # the older format's state lines
        elif kind is None and "id" in record and "timestamp" in record:
            self._session(record)  # the older format's first line
        elif isinstance(kind, str) and "payload" not in record:
            self._item(record, time, event=False)  # the older format's bare response items

    def _session(self, payload: dict[str, Any]) -> None:
        self.id = self.id or str(payload.get("id") or "")
        self.created = self.created or as_date(payload.get("timestamp"))
        for field, name in (("cwd", "project"), ("cli_version", "version"), ("originator", "originator")):
            if isinstance(payload.get(field), str):
                self.meta[name] = payload[field]
        git = payload.get("git")
        if isinstance(git, dict):
            if isinstance(git.get("branch"), str):
                self.meta["branch"] = git["branch"]
            if isinstance(git.get("commit_hash"), str):
                self.meta["commit"] = git["commit_hash"]

    def _item(self, item: dict[str, Any], time: str | None, event: bool) -> None:
        kind = item.get("type")
        if kind == "message":
            role = item.get("role")
            if role in ("user", "assistant"):
                self._said(str(role), first_text(item.get("content")), time)
        elif kind in ("function_call", "custom_tool_call", "local_shell_call"):
            args = (
                item.get("arguments") if kind == "function_call" else item.get("input") or item.get("action")
            )
            self.say("tool", trimmed(f"[{item.get('name', 'shell')}] {_shown(args)}"), time)
        elif kind in ("function_call_output", "custom_tool_call_output"):
            self.say("tool", trimmed(f"[result] {_output(item.get('output'))}"), time)
        elif kind == "web_search_call":
            action = item.get("action")
            query = action.get("query") if isinstance(action, dict) else None
            if query:
                self.say("tool", trimmed(f"[web search] {query}"), time)
        elif kind == "reasoning":
            summary = item.get("summary")
            if isinstance(summary, list):
                text = "\n".join(str(s.get("text") or "") for s in summary if isinstance(s, dict))
                self.say("thinking", trimmed(text), time)

    def _event(self, payload: dict[str, Any], time: str | None) -> None:
        kind = payload.get("type")
        if kind in ("user_message", "agent_message") and isinstance(payload.get("message"), str):
            self._said("user" if kind == "user_message" else "assistant", payload["message"], time)

    def _said(self, role: str, text: str, time: str | None) -> None:
        "A message, once: an event repeating a response item (or the other way) is dropped."
        text = text.strip()
        if not text or (role == "user" and text.startswith(NOT_SAID)):
            return
        mark = hashlib.sha1(f"{role}\0{text}".encode()).hexdigest()[:16]
        if mark in self.said:
            return
        self.said = [*self.said, mark][-RECENT:]
        if role == "user" and not self.title:
            self.title = first_words(text)
        self.say(role, trimmed(text, TEXT_BYTES), time)


def _shown(args: Any) -> str:
    if isinstance(args, str):
        try:
            parsed = json.loads(args)
        except ValueError:
            return args
        args = parsed
    if isinstance(args, dict):
        command = args.get("command") or args.get("cmd")
        if isinstance(command, list):
            command = " ".join(str(c) for c in command)
        if isinstance(command, str):
            return command
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _output(output: Any) -> str:
    "A tool's output: the JSON the CLI wraps it in (output and metadata), or plain text."
    if isinstance(output, str):
        try:
            parsed = json.loads(output)
        except ValueError:
            return output
        if isinstance(parsed, dict) and isinstance(parsed.get("output"), str):
            code = (
                parsed.get("metadata", {}).get("exit_code")
                if isinstance(parsed.get("metadata"), dict)
                else None
            )
            return (f"[exit {code}] " if code not in (None, 0) else "") + parsed["output"]
        return output
    if isinstance(output, dict) and isinstance(output.get("content"), str):
        return output["content"]
    return json.dumps(output, ensure_ascii=False) if output is not None else ""


class CodexKind(SessionKind):
    name = "codex"
    description = "Codex CLI rollout: ~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl"
    reader = CodexReader
    locations = ("$CODEX_HOME/sessions | ~/.codex/sessions",)

    def sniff(self, data: bytes) -> bool:
        head = data[:SNIFF_BYTES]
        if b'"session_meta"' in head or b'"response_item"' in head:
            return True
        # the older format: a first line with id, timestamp and instructions
        first = head.split(b"\n", 1)[0]
        return b'"instructions"' in first and b'"id"' in first and b'"timestamp"' in first
