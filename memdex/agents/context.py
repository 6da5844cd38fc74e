"""What the index holds about a project folder, in a few hundred tokens: the context memdex's
Claude Code plugin adds when a session starts (``memdex context --hook``).

It lists the folder's recent agent sessions (any agent whose session logs memdex reads), the
decisions and open threads said in the latest of them, and the memories and notes whose files
live in the folder. Lines go in by priority while the whole text stays within the budget it
declares (``max_tokens``, estimated as memdex estimates every text: bytes / 4, rounded up), so
the hook never costs a session more than that. It reads a few rows by named queries on a
read-only connection and parses nothing: the cost is the process's start.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdex.store import db

DEFAULT_TOKENS = 300  # what the hook declares and never passes (docs/agents.md)
SESSIONS = 5  # recent sessions listed
SESSIONS_READ = 3  # the latest sessions whose last chunks are read for decisions and threads
CHUNKS_READ = 12  # chunks read from the end of each of those
POINTS = 3  # decisions, open threads, notes: at most this many lines each
LINE_CHARS = 180  # a line longer than this is cut, with an ellipsis

# Said in a session, a sentence that records a choice (the same plain pattern as a
# conversation's has_decisions signal, memdex/ingest/chat.py) or leaves something open.
DECISION = re.compile(
    r"\b(decided|decision|we(?:'ll| will) go with|let'?s go with|going with|chose"
    r"|settled on|agreed to)\b",
    re.I,
)
OPEN_THREAD = re.compile(
    r"(?<![\w/.-])(?-i:TODOs?|FIXMEs?)\b(?![/.-]\w)"  # in capitals, and not a name: /todo-app/ is none
    r"|\b(next steps?|follow[- ]up|still (?:need|to do|open|failing|broken|missing)"
    r"|not (?:yet )?(?:done|fixed|finished|implemented)|open questions?|left to do|unresolved"
    r"|blocked on|remaining work)\b",
    re.I,
)
# What an agent's tools and reasoning wrote, not what was said (the ``Tool:`` lines of a
# session's chunks, ingest/chat.py): a build log holds "TODO" by the hundred.
SAID = re.compile(r"^(User|Assistant|\[subagent\] \w+): ?", re.M)
NOT_SAID = re.compile(r"^(Tool|Thinking|Shell|System)\b", re.M)
SENTENCE = re.compile(r"(?<=[.!?])\s+")
# What is no one's words, whoever's message holds it: code (fenced, or a line that reads as
# code: `throw new Error('... not yet implemented');`), an edit block's markers, a table row,
# and the wrappers Claude Code and IDEs put around what they add to a prompt.
FENCE = re.compile(r"^\s*(```|~~~).*?(^\s*\1[^\n]*$|\Z)", re.M | re.S)
WRAPPER = re.compile(
    r"<([a-z]+(?:[_-][a-z]+)+)>.*?</\1>|<(system-reminder|environment_details)>.*?</\2>", re.S
)
CODE = re.compile(
    r"^\s*(?:[{}\[\]]|\)\s*$|//|/\*|\*/|#!|<{7}|={7}|>{7}|\|"
    r"|(?:throw|return|const|let|var|def|import|export|function|class|if|elif|for|while)\b[^.!?]*[({:=;]"
    r")|[;{]\s*$|=>\s*[{(]|\)\s*;"
)
# A heading or a label alone ("## 6. **Next Steps**", "Next steps:"): no thread itself, but
# when it names one, the line under it is the thread.
HEADING = re.compile(
    r"^\s*(?:#{1,6}\s+)?(?:\d+[.)]\s*)?(?:\*\*|__)?(?P<text>[^*_]{1,60}?)(?:\*\*|__)?\s*:?\s*$"
)
MARKER = re.compile(r"^\s*(?:[-*+•]|\d+[.)])\s+")
# A prompt that is a command to the agent, not a question: /exit, /clear, /model opus.
COMMAND = re.compile(r"^/[\w:-]+(?:\s|$)")


@dataclass
class ProjectContext:
    "What the index holds about one folder, and the text that says it within a budget."

    project: str
    max_tokens: int
    sessions: list[dict[str, Any]] = field(default_factory=list)
    decisions: list[dict[str, Any]] = field(default_factory=list)
    open_threads: list[dict[str, Any]] = field(default_factory=list)
    last_prompt: dict[str, Any] | None = None
    files: list[dict[str, Any]] = field(default_factory=list)
    text: str = ""

    @property
    def est_tokens(self) -> int:
        return estimate(self.text)

    def to_dict(self) -> dict[str, Any]:
        return {
            "project": self.project,
            "max_tokens": self.max_tokens,
            "est_tokens": self.est_tokens,
            "sessions": self.sessions,
            "decisions": self.decisions,
            "open_threads": self.open_threads,
            "last_prompt": self.last_prompt,
            "files": self.files,
            "text": self.text,
        }


def estimate(text: str) -> int:
    "Estimated tokens of a text, as memdex counts every size: UTF-8 bytes / 4, rounded up."
    return -(-len(text.encode("utf-8")) // 4)


def project_context(
    conn: sqlite3.Connection, project: str | os.PathLike[str], max_tokens: int = DEFAULT_TOKENS
) -> ProjectContext:
    "What ``conn``'s index holds about the folder ``project``, said within ``max_tokens``."
    folder = os.path.realpath(os.path.abspath(os.path.expanduser(project))).rstrip("/") or "/"
    out = ProjectContext(project=folder, max_tokens=max_tokens)
    rows = conn.execute(db.query("agent_context_sessions"), {"project": folder, "limit": SESSIONS})
    out.sessions = [dict(r) for r in rows]
    for session in out.sessions[:SESSIONS_READ]:
        _read_session(conn, session, out)
    rows = conn.execute(db.query("agent_context_files"), {"project": folder, "limit": POINTS})
    out.files = [dict(r) for r in rows]
    out.text = render(out)
    return out


def _read_session(conn: sqlite3.Connection, session: dict[str, Any], out: ProjectContext) -> None:
    "The decisions, open threads and (for the latest session) last prompt said near its end."
    chunks = conn.execute(db.query("agent_context_chunks"), {"id": session["id"], "limit": CHUNKS_READ})
    date = (session["date"] or "")[:10]
    for chunk in chunks:  # last first
        for role, said in reversed(_messages(chunk["text"])):
            said = _words(said)
            if out.last_prompt is None and role == "User" and session is out.sessions[0] and _asked(said):
                out.last_prompt = {"date": date, "session": session["id"], "text": _cut(said)}
            for sentence, under_open in reversed(_sentences(said)):
                if len(sentence) < 12:
                    continue
                found = {"date": date, "session": session["id"], "text": _cut(sentence)}
                if DECISION.search(sentence) and len(out.decisions) < POINTS:
                    if found["text"] not in (d["text"] for d in out.decisions):
                        out.decisions.append(found)
                elif (under_open or OPEN_THREAD.search(sentence)) and len(out.open_threads) < POINTS:
                    if found["text"] not in (t["text"] for t in out.open_threads):
                        out.open_threads.append(found)


def _words(said: str) -> str:
    "What a message says in words: its code blocks and the wrappers tools put in a prompt left out."
    return WRAPPER.sub("", FENCE.sub("", said)).strip()


def _asked(said: str) -> bool:
    "A prompt a person asked: not a command to the agent (/exit), nor a subagent's task."
    return bool(said) and not COMMAND.match(said) and not said.startswith("[subagent]")


def _sentences(said: str) -> list[tuple[str, bool]]:
    """The sentences of a message in order, each with whether it is the first line under a
    heading that names an open thread ("**Next steps**"); headings and code are left out."""
    out: list[tuple[str, bool]] = []
    under_open = False
    for line in said.splitlines():
        if not line.strip() or CODE.search(line):
            continue
        heading = HEADING.match(line)
        if heading and (
            line.lstrip().startswith("#") or "**" in line or "__" in line or line.rstrip().endswith(":")
        ):
            under_open = bool(OPEN_THREAD.search(heading["text"]))
            continue
        text = MARKER.sub("", line).strip()
        parts = [s.strip() for s in SENTENCE.split(text) if s.strip()]
        out += [(s, under_open and n == 0) for n, s in enumerate(parts)]
        under_open = False
    return out


def _messages(text: str) -> list[tuple[str, str]]:
    "(speaker, what was said) of a conversation chunk, in order; tool output and reasoning left out."
    out: list[tuple[str, str]] = []
    marks = list(SAID.finditer(text))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        body = text[mark.end() : end]
        cut = NOT_SAID.search(body)
        said = body[: cut.start()] if cut else body
        if said.strip():
            out.append((mark.group(1).split()[-1], said.strip()))
    return out


def _cut(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= LINE_CHARS else text[: LINE_CHARS - 1].rstrip() + "…"


def render(ctx: ProjectContext) -> str:
    """The context as the agent reads it: a header, then the sessions, decisions, open
    threads and notes, each line added only while the whole stays within the budget.
    Nothing at all when the index holds nothing about the folder."""
    if not ctx.sessions and not ctx.files:
        return ""
    name = Path(ctx.project).name or ctx.project
    counts = []
    if ctx.sessions:
        counts.append(f"{len(ctx.sessions)}{'+' if len(ctx.sessions) == SESSIONS else ''} agent sessions")
    if ctx.files:
        counts.append(f"{len(ctx.files)}{'+' if len(ctx.files) == POINTS else ''} memories or notes")
    header = (
        f"memdex holds {' and '.join(counts)} about this folder ({ctx.project}). Search them with "
        f'memdex\'s search_knowledge_base (project="{name}" for its sessions), get_document to read one.'
    )
    asked = ctx.last_prompt
    sections: list[tuple[str, list[str]]] = [
        (
            "Recent sessions:",
            [
                f"- {(s['date'] or '')[:10]} {s['platform'] or s['kind']}: {_cut(s['title'] or s['key'])} "
                f"(id {s['id']})"
                for s in ctx.sessions
            ],
        ),
        ("Decisions said lately:", [f"- {d['date']}: {d['text']}" for d in ctx.decisions]),
        (
            "Open threads:",
            ([f"- last asked ({asked['date']}): {asked['text']}"] if asked else [])
            + [f"- {t['date']}: {t['text']}" for t in ctx.open_threads],
        ),
        (
            "Memories and notes here:",
            [f"- {(f['date'] or '')[:10]} {_cut(f['title'])} (id {f['id']})" for f in ctx.files],
        ),
    ]
    lines = [header]
    if estimate(header) > ctx.max_tokens:
        return ""
    for title, items in sections:
        taken: list[str] = []
        for item in items:
            if estimate("\n".join([*lines, title, *taken, item])) <= ctx.max_tokens:
                taken.append(item)
        if taken:
            lines += [title, *taken]
    return "\n".join(lines)


def hook_output(text: str) -> str:
    "What a Claude Code SessionStart hook prints for ``text`` to join the session's context."
    if not text:
        return ""
    return json.dumps({"hookSpecificOutput": {"hookEventName": "SessionStart", "additionalContext": text}})


def hook_folder(stdin_text: str) -> str:
    """The session's folder from what Claude Code hands a hook on stdin (its ``cwd``), else
    $CLAUDE_PROJECT_DIR, else the current folder."""
    try:
        data = json.loads(stdin_text) if stdin_text.strip() else {}
    except ValueError:
        data = {}
    cwd = data.get("cwd") if isinstance(data, dict) else None
    return cwd if isinstance(cwd, str) and cwd else os.environ.get("CLAUDE_PROJECT_DIR") or os.getcwd()
