"""What every chat kind shares: a conversation of messages, and how it becomes a document.

- One document per conversation: platform, title, dates, message and chunk counts, signals.
- Chunks are runs of whole messages under a token bound (bytes/4, ``DEFAULT_CHAT_TOKENS``
  unless ``--chunk-tokens`` says otherwise); a single message longer than the bound is cut at
  blank lines. Each chunk keeps its speaker roles and message range, and where each of its
  messages starts (``messages``: index, offset, role, time), so a search can hand out the
  messages around a match rather than the whole chunk (``memdex.query.passages``); none is empty.
- Signals are documented heuristics over the text (see SIGNALS).
- Topics: the title, and the conversation's most distinctive words: the words it uses most,
  counted twice when the user writes them, less stopwords and words under 4 letters. Tool
  calls and output, reasoning and shell lines (agent sessions) give no topic words.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from memdex.ingest.base import MB, SNIFF_BYTES, SourceFile, SourceKind
from memdex.ingest.markdown import cut_point
from memdex.models import Chunk, Document
from memdex.tokens import STOPWORDS

DEFAULT_CHAT_TOKENS = 350
TOPIC_WORDS = 8
ROLE_LABELS = {
    "user": "User",
    "assistant": "Assistant",
    "tool": "Tool",
    "system": "System",
    "shell": "Shell",
    "thinking": "Thinking",
}

# What an agent's tools and reasoning wrote, not what was said: no topic words come from it.
NOT_SAID = {"tool", "thinking", "shell"}

# has_<signal>: a message says so. Deliberately plain, so anyone can check why a chat has one.
SIGNALS = {
    "decisions": re.compile(
        r"\b(decided|decision|we(?:'ll| will) go with|let'?s go with|going with|chose"
        r"|settled on|agreed to)\b",
        re.I,
    ),
    "discoveries": re.compile(
        r"\b(turns out|found that|discovered|reali[sz]ed|learned that|root cause"
        r"|the (?:issue|problem|bug) was)\b",
        re.I,
    ),
    # three or more numbered steps in a row
    "procedures": re.compile(
        r"(?m)^\s*(?:\d+[.)]|step \d+)\s+\S.*(?:\n\s*(?:\d+[.)]|step \d+)\s+\S.*){2,}", re.I
    ),
    "artifacts": re.compile(r"```|\[tool use:|\[attachment:|\[artifact:", re.I),
}


@dataclass
class Message:
    role: str  # user | assistant | tool | system
    text: str
    time: str | None = None  # ISO 8601


@dataclass
class Conversation:
    id: str
    title: str
    platform: str
    messages: list[Message]
    created: str | None = None
    updated: str | None = None
    summary: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


class ChatKind(SourceKind):
    "A chat export: JSON files told apart by what is inside them."

    max_bytes = 2048 * MB
    suffixes = (".json",)
    markers: tuple[bytes, ...] = ()

    def claims(self, rel_path: str) -> bool:
        return rel_path.lower().endswith(".json")

    def sniff(self, data: bytes) -> bool:
        head = data[:SNIFF_BYTES]
        return all(marker in head for marker in self.markers)


def signals(messages: list[Message]) -> dict[str, bool]:
    text = "\n\n".join(m.text for m in messages)
    return {f"has_{name}": bool(pattern.search(text)) for name, pattern in SIGNALS.items()}


# Words people say in any conversation, whatever it is about: never a conversation's topic.
# (Contractions -- "that's", "you're" -- are left out by their apostrophe.)
SMALL_TALK = frozenset(
    """like good back need first since really think know want going make sure yeah okay thanks
    thank well right great just actually maybe still even something things thing lot would
    could should might also that this with have from they them then than there here what when
    which about into your yours been were will more most much very some such only other
    after before again next last every being does done doing didn said says okay alright
    let's looks look seems seem kind sort pretty quite probably definitely anyway though""".split()
)


def distinctive_words(messages: list[Message], n: int = TOPIC_WORDS) -> list[str]:
    "The words said most often in a conversation (the user's count double): its topics."
    counts: Counter[str] = Counter()
    for m in messages:
        if m.role in NOT_SAID:
            continue
        weight = 2 if m.role == "user" else 1
        # typographic apostrophes (’, common in exports) as plain ones: "doesn’t" is a contraction
        for word in re.findall(r"[^\W\d_][\w'-]{3,}", m.text.lower().replace("\u2019", "'")):
            word = word.strip("'-")
            if len(word) >= 4 and "'" not in word and word not in STOPWORDS and word not in SMALL_TALK:
                counts[word] += weight
    return [w for w, c in counts.most_common(n) if c > 1]


def to_document(
    conv: Conversation, source: SourceFile, kind: str, topics: list[str] | None = None
) -> Document:
    "A conversation as a document of ``kind``, chunked at message boundaries."
    bound = (source.chunk_tokens or DEFAULT_CHAT_TOKENS) * 4
    chunks = chunk_messages(conv.messages, conv.title, bound)
    text_size = sum(len(m.text.encode("utf-8")) for m in conv.messages)
    if topics is None:
        topics = [conv.title, *distinctive_words(conv.messages)]
    meta = {
        **conv.meta,
        "message_count": len(conv.messages),
        "chunk_count": len(chunks),
        **signals(conv.messages),
    }
    return Document(
        key=conv.id,
        kind=kind,
        title=conv.title,
        chunks=chunks,
        size_bytes=text_size,
        description=conv.summary,
        topics=[(t, "derived") for t in topics if t],
        platform=conv.platform,
        date=conv.updated or conv.created,
        date_source="conversation" if conv.updated or conv.created else None,
        created=conv.created,
        modified=conv.updated,
        scope=source.scope,
        meta=meta,
    )


def chunk_messages(messages: list[Message], title: str, bound: int, first: int = 0) -> list[Chunk]:
    """Whole exchanges -- a user message and the replies to it -- packed into chunks of at
    most ``bound`` bytes, so a question stays with its answer. An exchange too long for one
    chunk is cut between its messages, and a message too long on its own at blank lines.
    Messages are numbered from ``first`` (a session read on from where it stopped)."""
    rendered = [
        (i, m, f"{ROLE_LABELS.get(m.role, m.role.title())}: {m.text.strip()}")
        for i, m in enumerate(messages, first)
    ]
    exchanges: list[list[tuple[int, Message, str]]] = []
    for item in rendered:
        if not exchanges or item[1].role == "user":
            exchanges.append([])
        exchanges[-1].append(item)
    chunks: list[Chunk] = []
    run: list[tuple[int, Message, str]] = []

    def size(items: list[tuple[int, Message, str]]) -> int:
        return sum(len(text.encode("utf-8")) + 2 for _, _, text in items)

    for exchange in exchanges:
        if run and size(run) + size(exchange) > bound:
            chunks.append(_chunk(title, run))
            run = []
        if size(exchange) <= bound:
            run += exchange
            continue
        for item in exchange:  # an exchange longer than a chunk: message by message
            if run and size(run) + size([item]) > bound:
                chunks.append(_chunk(title, run))
                run = []
            if size([item]) <= bound:
                run.append(item)
            else:
                chunks += [_chunk(title, [(item[0], item[1], piece)]) for piece in _pieces(item[2], bound)]
    if run:
        chunks.append(_chunk(title, run))
    return chunks


def _chunk(title: str, run: list[tuple[int, Message, str]]) -> Chunk:
    roles = list(dict.fromkeys(m.role for _, m, _ in run))
    meta: dict[str, Any] = {"msg_start": run[0][0], "msg_end": run[-1][0], "roles": roles}
    if run[0][1].time:
        meta["time"] = run[0][1].time
    meta["messages"] = message_offsets(run)
    return Chunk(heading=title, text="\n\n".join(text for _, _, text in run), meta=meta)


def message_offsets(run: list[tuple[int, Message, str]]) -> list[list[Any]]:
    "Where each message starts in a chunk's text: [message index, character offset, role, time]."
    out: list[list[Any]] = []
    offset = 0
    for i, m, text in run:
        out.append([i, offset, m.role, m.time])
        offset += len(text) + 2  # the blank line between messages
    return out


def _pieces(text: str, bound: int) -> list[str]:
    "Cut one long message at blank lines, then at spaces, into pieces of at most ``bound`` bytes."
    pieces: list[str] = []
    current = ""
    for paragraph in re.split(r"\n\s*\n", text):
        while len(paragraph.encode("utf-8")) > bound:
            cut = cut_point(paragraph, bound)
            if current:
                pieces.append(current)
                current = ""
            pieces.append(paragraph[:cut])
            paragraph = paragraph[cut:].lstrip()
        candidate = f"{current}\n\n{paragraph}" if current else paragraph
        if current and len(candidate.encode("utf-8")) > bound:
            pieces.append(current)
            current = paragraph
        else:
            current = candidate
    if current.strip():
        pieces.append(current)
    return [p for p in pieces if p.strip()]


def first_words(text: str, limit: int = 60) -> str:
    "A title for an untitled conversation: its first message, cut at a word."
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rsplit(" ", 1)[0] + "…"
