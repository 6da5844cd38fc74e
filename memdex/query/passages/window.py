"""What a conversation passage is: a window of messages, each shown whole or cut short.

A window keeps its speakers (the ``User:`` labels in its text) and each message's time. A
message it was chosen for is shown whole; a message around it is context, shown whole when it
is short for its speaker (``ranking.context_tokens``), else cut to its words nearest the match
and listed in the window's ``cut``: context, not evidence.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memdex.models import est_tokens
from memdex.query import ranking

WHOLE, HEAD, TAIL = "whole", "head", "tail"  # a message shown whole, its start, its end


@dataclass
class Turn:
    "One message of a conversation as a chunk holds it (a long message may be one piece of it)."

    index: int  # the message's place in its conversation, 0-based (as msg_start)
    role: str
    time: str | None
    text: str  # with its speaker label: "User: ..."
    chunk_id: int
    seq: int
    tokens: list[str] = field(default_factory=list, repr=False)

    @property
    def est_tokens(self) -> int:
        return est_tokens(len(self.text.encode("utf-8")))

    @property
    def said(self) -> str:
        "The message without its speaker's label (a long message's later piece has none)."
        label = f"{self.role.title()}: "  # as ingest.chat writes it (ROLE_LABELS)
        return self.text[len(label) :] if self.text.startswith(label) else self.text


@dataclass
class Window:
    "A run of a conversation's messages handed out as one passage."

    chunk_id: int  # the chunk of its best message
    turns: list[Turn]
    shown: list[str]  # for each turn: WHOLE, HEAD or TAIL
    score: float
    matched: list[int]  # indexes of the messages that hold the query's words
    scores: dict[int, float] = field(default_factory=dict)  # each of those messages' own score

    @property
    def text(self) -> str:
        return "\n\n".join(show(t, how) for t, how in zip(self.turns, self.shown, strict=True))

    @property
    def size_bytes(self) -> int:
        return len(self.text.encode("utf-8"))

    @property
    def est_tokens(self) -> int:
        return est_tokens(self.size_bytes)

    @property
    def msg_start(self) -> int:
        return self.turns[0].index

    @property
    def msg_end(self) -> int:
        return self.turns[-1].index

    @property
    def cut(self) -> list[int]:
        "Messages shown only in part: context, not evidence."
        return list(
            dict.fromkeys(t.index for t, how in zip(self.turns, self.shown, strict=True) if how != WHOLE)
        )

    def meta(self) -> dict[str, Any]:
        "What a result or passage says about the window: its messages, speakers and times."
        out: dict[str, Any] = {
            "msg_start": self.msg_start,
            "msg_end": self.msg_end,
            "roles": list(dict.fromkeys(t.role for t in self.turns)),
        }
        if self.turns[0].time:
            out["time"] = self.turns[0].time
        seen: dict[int, Turn] = {}
        for t in self.turns:
            seen.setdefault(t.index, t)
        out["window"] = {
            "matched": self.matched,
            "cut": self.cut,
            "messages": [{"n": t.index, "role": t.role, "time": t.time} for t in seen.values()],
        }
        return out


def context(turn: Turn, part: str) -> str:
    "How a message around a match is shown: whole if short for its speaker, else its near part."
    return WHOLE if turn.est_tokens <= ranking.context_tokens(turn.role) else part


def show(turn: Turn, how: str) -> str:
    "A message as a window shows it: whole, or cut at a word to its speaker's context size."
    if how == WHOLE:
        return turn.text
    limit = ranking.context_tokens(turn.role) * 4
    label, sep, body = turn.text.partition(": ")
    if not sep:
        label, body = "", turn.text
    words = body.split()
    kept: list[str] = []
    size = 0
    for w in words if how == HEAD else reversed(words):
        size += len(w.encode("utf-8")) + 1
        if size > limit and kept:
            break
        kept.append(w)
    shown = " ".join(kept) + " …" if how == HEAD else "… " + " ".join(reversed(kept))
    return f"{label}: {shown}" if label else shown


def seeds(window: Window) -> list[Window]:
    """The window cut back to each message it matched, with that message's context: what an
    answer re-packs under its own budget when the whole window does not fit
    (``answer.sources``)."""
    if not window.matched:
        return [window]
    out = []
    for m in window.matched:
        at = [p for p, t in enumerate(window.turns) if t.index == m]
        lo = max(0, at[0] - ranking.WINDOW_BEFORE)
        hi = min(len(window.turns) - 1, at[-1] + ranking.WINDOW_AFTER)
        turns = window.turns[lo : hi + 1]
        shown = [
            WHOLE if t.index == m else context(t, TAIL if p < at[0] else HEAD)
            for p, t in enumerate(turns, lo)
        ]
        score = window.scores.get(m, window.score)
        out.append(Window(window.chunk_id, turns, shown, score, [m], {m: score}))
    return out


def merge(windows: list[Window]) -> list[Window]:
    "Windows of one conversation, merged where they overlap or touch; a message shown whole wins."
    shown: dict[tuple[int, int], tuple[Turn, str]] = {}
    owner: dict[tuple[int, int], Window] = {}
    for w in sorted(windows, key=lambda w: -w.score):  # a message between two: as the better shows it
        for t, how in zip(w.turns, w.shown, strict=True):
            key = (t.seq, t.index)
            if key not in shown or how == WHOLE:
                shown[key] = (t, how)
            owner.setdefault(key, w)
    out: list[Window] = []
    for key in sorted(shown):
        t, how = shown[key]
        last = out[-1].turns[-1] if out else None
        if last is not None and t.index - last.index <= 1 and t.seq - last.seq <= 1:
            out[-1].turns.append(t)
            out[-1].shown.append(how)
            continue
        first = owner[key]
        out.append(Window(first.chunk_id, [t], [how], first.score, []))
    for w in out:
        parts = {id(owner[(t.seq, t.index)]): owner[(t.seq, t.index)] for t in w.turns}.values()
        w.score = max(p.score for p in parts)
        w.scores = {m: sc for p in parts for m, sc in p.scores.items() if w.msg_start <= m <= w.msg_end}
        w.matched = sorted({m for p in parts for m in p.matched if w.msg_start <= m <= w.msg_end})
    return out
