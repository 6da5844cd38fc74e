"""Source kinds and the registry that picks one per root and per file.

Every parser, the built-in ones included, is registered here the same way: adding a kind is
a new module, one ``register()`` line and a fixture. ``index_paths`` (in ``pipeline``) does
the walking, change detection and writing for all of them.
"""

from __future__ import annotations

from pathlib import Path

from memdex.errors import InvalidParameter
from memdex.ingest.base import SourceFile, SourceKind
from memdex.ingest.kinds.archive import ArchiveKind
from memdex.ingest.kinds.chatgpt import ChatGPTKind
from memdex.ingest.kinds.claude import ClaudeKind
from memdex.ingest.kinds.gemini import GeminiKind
from memdex.ingest.kinds.memory import MemoryKind
from memdex.ingest.kinds.note import NoteKind
from memdex.ingest.kinds.serena import SerenaKind

SOURCES: dict[str, SourceKind] = {}

# Bumped whenever a parser reads the same bytes into something different; a root last read
# by an older version is read again in full (roots.ingest_version). 2: Serena rows after a
# blank line belong to the table above. 3: headings and fences by CommonMark (markdown-it-py).
INGEST_VERSION = 3


def register(kind: SourceKind) -> SourceKind:
    "Add a source kind. Root kinds are tried in registration order, then file kinds."
    SOURCES[kind.name] = kind
    return kind


register(SerenaKind())
register(ArchiveKind())
register(MemoryKind())
register(NoteKind())
register(ChatGPTKind())
register(ClaudeKind())
register(GeminiKind())


def get_kind(name: str) -> SourceKind:
    try:
        return SOURCES[name]
    except KeyError:
        known = ", ".join(sorted(SOURCES))
        raise InvalidParameter(f"Unknown kind {name!r}: use one of {known}.") from None


def detect_root_kind(root: Path) -> str | None:
    "The kind that claims this folder as a whole, or None: then each file picks its kind."
    for kind in SOURCES.values():
        if kind.claims_root(root):
            return kind.name
    return None


def kinds_for(rel_path: str, forced: str | None, root_kind: str | None) -> list[SourceKind]:
    "Which kinds may read this file, best first; empty when it is not a source file."
    if forced:
        kind = get_kind(forced)
        return [kind] if kind.accepts(rel_path) else []
    if root_kind:
        kind = SOURCES[root_kind]
        if kind.accepts(rel_path):
            return [kind]
    return [k for k in SOURCES.values() if k.claims(rel_path)]


__all__ = ["SOURCES", "SourceFile", "SourceKind", "detect_root_kind", "get_kind", "kinds_for", "register"]
