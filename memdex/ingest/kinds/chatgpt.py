"""chatgpt: ``conversations.json`` from a ChatGPT data export.

Each conversation is a tree of nodes in ``mapping``; regenerated answers are branches. The
conversation the user saw is the path from ``current_node`` up through ``parent`` links
(the order of ``mapping``'s keys is not the conversation's order); without a
``current_node``, the newest leaf. Text, code and execution output are kept; hidden system
messages, custom instructions and the model's "thoughts" are not. A record with no
``mapping`` or no id is reported and skipped.
"""

from __future__ import annotations

from typing import Any

from memdex.errors import IngestError
from memdex.ingest.base import SourceFile
from memdex.ingest.chat import ChatKind, Conversation, Message, first_words, to_document
from memdex.models import ParsedFile
from memdex.utils import as_date

SKIPPED_CONTENT = {"thoughts", "reasoning_recap", "user_editable_context", "model_editable_context"}


class ChatGPTKind(ChatKind):
    name = "chatgpt"
    description = "ChatGPT data export conversations.json (message trees, active branch)"
    markers = (b'"mapping"',)

    def parse(self, source: SourceFile) -> ParsedFile:
        records = source.json()
        if isinstance(records, dict):
            records = records.get("conversations", [records])
        if not isinstance(records, list):
            raise IngestError("expected a list of conversations (a ChatGPT conversations.json)")
        parsed = ParsedFile(kind=self.name)
        for position, record in enumerate(records, 1):
            label = _label(record, position)
            try:
                conversation = read_conversation(record)
            except IngestError as exc:
                parsed.skipped.append((label, str(exc)))
                continue
            parsed.documents.append(to_document(conversation, source, self.name))
        return parsed


def _label(record: Any, position: int) -> str:
    if isinstance(record, dict):
        ident = record.get("conversation_id") or record.get("id")
        if ident:
            return str(ident)
        if record.get("title"):
            return f"{position} ({record['title']})"
    return str(position)


def read_conversation(record: Any) -> Conversation:
    if not isinstance(record, dict):
        raise IngestError("record is not an object")
    ident = record.get("conversation_id") or record.get("id")
    if not ident:
        raise IngestError("record has no id (conversation_id or id)")
    mapping = record.get("mapping")
    if not isinstance(mapping, dict) or not mapping:
        raise IngestError("record has no mapping (the message tree)")
    messages = [m for node in active_branch(mapping, record.get("current_node")) if (m := _message(node))]
    if not messages:
        raise IngestError("conversation has no messages with text")
    title = str(record.get("title") or "").strip() or first_words(messages[0].text)
    meta = {"model": record.get("default_model_slug")} if record.get("default_model_slug") else {}
    return Conversation(
        id=str(ident),
        title=title,
        platform="chatgpt",
        messages=messages,
        created=as_date(record.get("create_time")),
        updated=as_date(record.get("update_time")),
        meta=meta,
    )


def active_branch(mapping: dict[str, Any], current: Any) -> list[dict[str, Any]]:
    "The nodes from the root down to ``current`` (or the newest leaf), following parent links."
    if current not in mapping:
        parents = {node.get("parent") for node in mapping.values() if isinstance(node, dict)}
        leaves = [key for key in mapping if key not in parents]
        if not leaves:
            return []

        def created(key: str) -> float:
            message = mapping[key].get("message") or {}
            value = message.get("create_time")
            return float(value) if isinstance(value, (int, float)) else 0.0

        current = max(leaves, key=created)
    path: list[dict[str, Any]] = []
    seen: set[str] = set()
    node_id = current
    while isinstance(node_id, str) and node_id in mapping and node_id not in seen:
        seen.add(node_id)
        node = mapping[node_id]
        if not isinstance(node, dict):
            break
        path.append(node)
        node_id = node.get("parent")
    path.reverse()
    return path


def _message(node: dict[str, Any]) -> Message | None:
    message = node.get("message")
    if not isinstance(message, dict):
        return None
    metadata = message.get("metadata") or {}
    role = ((message.get("author") or {}).get("role")) or "assistant"
    if metadata.get("is_visually_hidden_from_conversation") or role == "system":
        return None
    content = message.get("content") or {}
    if content.get("content_type") in SKIPPED_CONTENT:
        return None
    text = content_text(content)
    attachments = [
        a.get("name") for a in metadata.get("attachments") or [] if isinstance(a, dict) and a.get("name")
    ]
    if attachments:
        text = "\n".join([text, *(f"[attachment: {name}]" for name in attachments)]).strip()
    if not text.strip():
        return None
    return Message(role=role, text=text, time=as_date(message.get("create_time")))


def content_text(content: dict[str, Any]) -> str:
    "Text of a message's content: parts (strings, or objects with text), code, output."
    kind = content.get("content_type") or "text"
    if kind == "code":
        language = content.get("language") or ""
        language = "" if language == "unknown" else language
        return f"```{language}\n{content.get('text', '')}\n```"
    if "parts" in content:
        texts = []
        for part in content.get("parts") or []:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(t for t in texts if t.strip())
    text = content.get("text") or content.get("result") or ""
    return text if isinstance(text, str) else ""
