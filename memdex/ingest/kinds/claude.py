"""claude: Claude exports, a bulk ``conversations.json`` (an array) or one conversation.

Messages come from ``content`` blocks (text; tool use and results as text; thinking is left
out) or, in the old shape, from plain ``text``; attachments add their extracted content.
When messages carry ``parent_message_uuid`` links, the conversation is the branch that ends
at ``current_leaf_message_uuid`` (or the newest leaf); otherwise messages are ordered by time,
the human before the assistant when they share a timestamp. A conversation with no messages
is reported and skipped.
"""

from __future__ import annotations

import json
from typing import Any

from memdex.errors import IngestError
from memdex.ingest.base import SourceFile
from memdex.ingest.chat import ChatKind, Conversation, Message, first_words, to_document
from memdex.models import ParsedFile
from memdex.utils import as_date

ROOT_PARENT = "00000000-0000-4000-8000-000000000000"
ROLES = {"human": "user", "user": "user", "assistant": "assistant"}


class ClaudeKind(ChatKind):
    name = "claude"
    description = "Claude export: conversations.json (array) or one conversation's JSON"
    markers = (b'"chat_messages"',)

    def parse(self, source: SourceFile) -> ParsedFile:
        data = source.json()
        records = data if isinstance(data, list) else [data]
        parsed = ParsedFile(kind=self.name)
        for position, record in enumerate(records, 1):
            label = str(record.get("uuid") or position) if isinstance(record, dict) else str(position)
            try:
                conversation = read_conversation(record)
            except IngestError as exc:
                parsed.skipped.append((label, str(exc)))
                continue
            parsed.documents.append(to_document(conversation, source, self.name))
        return parsed


def read_conversation(record: Any) -> Conversation:
    if not isinstance(record, dict):
        raise IngestError("record is not an object")
    ident = record.get("uuid") or record.get("conversation_id") or record.get("id")
    if not ident:
        raise IngestError("conversation has no uuid")
    raw = record.get("chat_messages")
    if not isinstance(raw, list) or not raw:
        raise IngestError("conversation has no chat_messages")
    messages = [m for item in ordered(raw, record.get("current_leaf_message_uuid")) if (m := _message(item))]
    if not messages:
        raise IngestError("conversation has no messages with text")
    title = str(record.get("name") or "").strip() or first_words(messages[0].text)
    meta = {"model": record["model"]} if record.get("model") else {}
    return Conversation(
        id=str(ident),
        title=title,
        platform="claude",
        messages=messages,
        summary=str(record.get("summary") or ""),
        created=as_date(record.get("created_at")),
        updated=as_date(record.get("updated_at")),
        meta=meta,
    )


def ordered(raw: list[Any], leaf: Any) -> list[dict[str, Any]]:
    "The messages of the conversation the user saw, in order."
    items = [m for m in raw if isinstance(m, dict)]
    by_id = {m.get("uuid"): m for m in items if m.get("uuid")}
    linked = any(m.get("parent_message_uuid") not in (None, "", ROOT_PARENT) for m in items)
    if not linked:
        return sorted(items, key=_time_key)
    if leaf not in by_id:
        parents = {m.get("parent_message_uuid") for m in items}
        leaves = [m for m in items if m.get("uuid") not in parents]
        leaf = max(leaves, key=_time_key).get("uuid") if leaves else None
    branch: list[dict[str, Any]] = []
    seen: set[Any] = set()
    node = by_id.get(leaf)
    while node is not None and node.get("uuid") not in seen:
        seen.add(node.get("uuid"))
        branch.append(node)
        node = by_id.get(node.get("parent_message_uuid"))
    branch.reverse()
    return branch


def _time_key(message: dict[str, Any]) -> tuple[str, int, int]:
    sender_order = 0 if ROLES.get(str(message.get("sender")), "") == "user" else 1
    index = message.get("index")
    return (as_date(message.get("created_at")) or "", sender_order, index if isinstance(index, int) else 0)


def _message(item: dict[str, Any]) -> Message | None:
    role = ROLES.get(str(item.get("sender")), "assistant")
    blocks = item.get("content")
    text = ""
    if isinstance(blocks, list):
        text = "\n\n".join(t for block in blocks if (t := block_text(block)))
    if not text.strip():  # the old shape, or blocks with nothing to read: the plain text
        text = str(item.get("text") or "")
    extras = []
    for attachment in item.get("attachments") or []:
        if isinstance(attachment, dict):
            name = attachment.get("file_name") or "attachment"
            extracted = attachment.get("extracted_content") or ""
            extras.append(f"[attachment: {name}]\n{extracted}".strip())
    for file in item.get("files") or []:
        if isinstance(file, dict) and file.get("file_name"):
            extras.append(f"[file: {file['file_name']}]")
    text = "\n\n".join([text, *extras]).strip()
    if not text:
        return None
    return Message(role=role, text=text, time=as_date(item.get("created_at")))


def block_text(block: Any) -> str:
    "One content block as text: text as is, tool use and results labelled; thinking left out."
    if not isinstance(block, dict):
        return ""
    kind = block.get("type")
    if kind == "thinking":
        return ""
    if kind == "tool_use":
        payload = block.get("input")
        shown = payload if isinstance(payload, str) else json.dumps(payload, ensure_ascii=False)
        return f"[tool use: {block.get('name', 'tool')}] {shown}"
    if kind == "tool_result":
        content = block.get("content")
        if isinstance(content, list):
            inner = "\n".join(block_text(c) for c in content)
        else:
            inner = str(content or "")
        return f"[tool result]\n{inner}".strip()
    text = block.get("text")
    return text if isinstance(text, str) else ""
