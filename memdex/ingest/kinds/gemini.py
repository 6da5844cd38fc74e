"""gemini: Google Takeout ``MyActivity.json`` for Gemini Apps.

Each activity record is one prompt (its title, after the "Prompted" label in any language)
and the response (``safeHtmlItem``, as text). Records of other products and feedback records
are not chats and are passed over; a record whose time cannot be read is reported and
skipped. Takeout keeps no conversation ids, so prompts less than 30 minutes apart make one
conversation.
"""

from __future__ import annotations

import html
import re
from datetime import datetime
from html.parser import HTMLParser
from typing import Any

from memdex.errors import IngestError
from memdex.ingest.base import SourceFile
from memdex.ingest.chat import ChatKind, Conversation, Message, first_words, to_document
from memdex.models import ParsedFile
from memdex.utils import as_date, utc_stamp

SESSION_GAP_SECONDS = 30 * 60
_PROMPT = re.compile(r"^(?:Prompted|[^:]{1,40}:)\s*(?P<prompt>.+)$", re.S)
_NOT_PROMPTS = ("Gave feedback", "Used ", "Visited ", "Viewed ")


class GeminiKind(ChatKind):
    name = "gemini"
    description = "Google Takeout MyActivity.json of Gemini Apps"
    markers = (b'"Gemini',)

    def sniff(self, data: bytes) -> bool:
        """A Takeout activity file is an array of records naming Gemini: a JSON object that
        mentions Gemini (an agent's session log, another tool's transcript) is not one."""
        return data.lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"[") and super().sniff(data)

    def parse(self, source: SourceFile) -> ParsedFile:
        records = source.json()
        if not isinstance(records, list):
            raise IngestError("expected a list of activity records (a Takeout MyActivity.json)")
        parsed = ParsedFile(kind=self.name)
        turns: list[tuple[datetime, str, str]] = []
        for position, record in enumerate(records, 1):
            if not _is_gemini(record):
                continue
            prompt = _prompt(str(record.get("title") or ""))
            if prompt is None:
                continue
            moment = as_date(record.get("time"))
            if moment is None:
                parsed.skipped.append((str(position), f"activity time {record.get('time')!r} is not a date"))
                continue
            response = "\n\n".join(
                html_text(item.get("html", ""))
                for item in record.get("safeHtmlItem") or []
                if isinstance(item, dict)
            )
            turns.append((datetime.fromisoformat(moment.replace("Z", "+00:00")), prompt, response))
        for conversation in sessions(turns):
            parsed.documents.append(to_document(conversation, source, self.name))
        return parsed


def _is_gemini(record: Any) -> bool:
    if not isinstance(record, dict):
        return False
    products = record.get("products") or []
    return any("Gemini" in str(p) for p in products) or "Gemini" in str(record.get("header", ""))


def _prompt(title: str) -> str | None:
    if title.startswith(_NOT_PROMPTS):
        return None
    match = _PROMPT.match(title.strip())
    return match.group("prompt").strip() if match else None


def sessions(turns: list[tuple[datetime, str, str]]) -> list[Conversation]:
    "Prompts in time order, a new conversation after 30 minutes of silence."
    conversations: list[Conversation] = []
    current: list[tuple[datetime, str, str]] = []
    for turn in sorted(turns, key=lambda t: t[0]):
        if current and (turn[0] - current[-1][0]).total_seconds() > SESSION_GAP_SECONDS:
            conversations.append(_conversation(current))
            current = []
        current.append(turn)
    if current:
        conversations.append(_conversation(current))
    return conversations


def _conversation(turns: list[tuple[datetime, str, str]]) -> Conversation:
    messages: list[Message] = []
    for moment, prompt, response in turns:
        stamp = utc_stamp(moment)
        messages.append(Message("user", prompt, stamp))
        if response.strip():
            messages.append(Message("assistant", response, stamp))
    start = utc_stamp(turns[0][0])
    return Conversation(
        id=f"gemini-{start}",
        title=first_words(turns[0][1]),
        platform="gemini",
        messages=messages,
        created=start,
        updated=utc_stamp(turns[-1][0]),
    )


class _Text(HTMLParser):
    "HTML to plain text: tags become spacing, scripts and styles vanish."

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.hidden = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in ("script", "style"):
            self.hidden += 1
        elif tag in ("p", "br", "li", "div", "tr", "h1", "h2", "h3", "pre"):
            self.parts.append("\n")

    def handle_endtag(self, tag: str) -> None:
        if tag in ("script", "style") and self.hidden:
            self.hidden -= 1

    def handle_data(self, data: str) -> None:
        if not self.hidden:
            self.parts.append(data)


def html_text(markup: str) -> str:
    parser = _Text()
    parser.feed(markup)
    parser.close()
    text = html.unescape("".join(parser.parts))
    return "\n".join(line.strip() for line in text.splitlines() if line.strip())
