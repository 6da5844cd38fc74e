"""Source kinds and the registry that picks one per root and per file.

Every parser, the built-in ones included, is registered here the same way: adding a kind is
a new module, one line in ``BUILT_IN`` and a fixture. ``index_paths`` (in ``pipeline``) does
the walking, change detection and writing for all of them.

The kinds' modules, and the parsers they import, load on the first call of ``sources()``.
What the rest of memdex asks of a kind by its name alone (``traits_of``: is a file one
document, does its agent resume a session, what does `memdex status` count for its roots)
is declared in ``BUILT_IN`` and nowhere else, so `memdex show` and `memdex search` start
without loading any parser. A kind registered from outside (``register``) declares its own
on its class.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memdex.errors import InvalidParameter
from memdex.ingest.base import KindTraits, Resume, SourceFile, SourceKind

# How each agent resumes a session: the command, run in the session's folder.
RESUME = {
    "claude-code": Resume(("claude", "--resume", "{session|key}")),
    "codex": Resume(("codex", "resume", "{key}")),  # `codex resume` alone lists the folder's sessions
    "gemini-cli": Resume(("gemini", "--resume", "{session}")),  # sessions are kept per project folder
    "copilot-cli": Resume(("copilot", "--resume", "{session}")),
    "opencode": Resume(("opencode", "--session", "{session}")),
    "aider": Resume(("aider", "--restore-chat-history")),  # no session by id: the folder's whole history
}


def _agent(name: str, session_ids: bool = True) -> KindTraits:
    return KindTraits(session_log=True, resume=RESUME[name], session_ids=session_ids)


# name -> ("module:Class" that reads it, its traits): the one place a built-in kind's traits are
# declared, so that what the rest of memdex asks of a kind (traits_of) needs no parser loaded.
# Root kinds are tried in this order, and so are file kinds: of the kinds that claim a file by
# its name, the first whose sniff knows it reads it (an Aider history before any markdown;
# agents' JSON before the chat exports').
BUILT_IN: dict[str, tuple[str, KindTraits]] = {
    "serena": (
        "memdex.ingest.kinds.serena:SerenaKind",
        # root_counts: the memories no index row points at, in `memdex status`
        KindTraits(one_document_per_file=True, root_counts=("serena_orphans",)),
    ),
    "archive": ("memdex.ingest.kinds.archive:ArchiveKind", KindTraits()),
    "memory": ("memdex.ingest.kinds.memory:MemoryKind", KindTraits(one_document_per_file=True)),
    "aider": ("memdex.ingest.kinds.aider:AiderKind", _agent("aider", session_ids=False)),
    "note": ("memdex.ingest.kinds.note:NoteKind", KindTraits(one_document_per_file=True)),
    "text": ("memdex.ingest.kinds.plain:PlainKind", KindTraits(one_document_per_file=True)),
    "chatgpt": ("memdex.ingest.kinds.chatgpt:ChatGPTKind", KindTraits()),
    "claude": ("memdex.ingest.kinds.claude:ClaudeKind", KindTraits()),
    "gemini-cli": ("memdex.ingest.kinds.gemini_cli:GeminiCliKind", _agent("gemini-cli")),
    "gemini": ("memdex.ingest.kinds.gemini:GeminiKind", KindTraits()),
    "copilot-cli": ("memdex.ingest.kinds.copilot_cli:CopilotCliKind", _agent("copilot-cli")),
    "opencode": ("memdex.ingest.kinds.opencode:OpenCodeKind", _agent("opencode")),
    # OpenCode 1.2 and later: the same sessions in opencode.db; its documents are "opencode"'s
    # (one kind of session whichever layout kept it), so they resume the same way.
    "opencode-db": ("memdex.ingest.kinds.opencode_db:OpenCodeDbKind", _agent("opencode")),
    "claude-code": ("memdex.ingest.kinds.claude_code:ClaudeCodeKind", _agent("claude-code")),
    "codex": ("memdex.ingest.kinds.codex:CodexKind", _agent("codex")),
}

# Bumped whenever a parser reads the same bytes into something different; a root last read
# by an older version is read again in full (roots.ingest_version). 2: Serena rows after a
# blank line belong to the table above. 3: headings and fences by CommonMark (markdown-it-py).
# 4: a conversation's topics leave out small talk and contractions. 5: chat chunks say where
# each message starts (passages are cut at message boundaries). 6: contractions with a
# typographic apostrophe are no chat topics; a note's frontmatter ``date:`` dates it.
# 7: Gemini CLI, Copilot CLI, OpenCode and Aider have kinds: their files, read as notes or
# claimed by claude-code's sniff before, are read by their own.
INGEST_VERSION = 7


_loaded: dict[str, SourceKind] | None = None
_loading = threading.RLock()


def sources() -> dict[str, SourceKind]:
    "Every registered kind by name, the built-in ones loaded on first use (their parsers with them)."
    global _loaded
    if _loaded is None:
        with _loading:
            if _loaded is None:
                kinds: dict[str, SourceKind] = {}
                for name, (where, traits) in BUILT_IN.items():
                    module, _, cls = where.partition(":")
                    kind: SourceKind = getattr(importlib.import_module(module), cls)()
                    if kind.name != name:
                        raise TypeError(f"{where} is {kind.name!r}, but BUILT_IN names it {name!r}")
                    kind.declared = traits
                    kinds[name] = kind
                _loaded = kinds
    return _loaded


def register(kind: SourceKind) -> SourceKind:
    "Add a source kind. Root kinds are tried in registration order, then file kinds."
    sources()[kind.name] = kind
    return kind


def session_kinds() -> list[str]:
    """The kinds whose documents' keys are agents' session ids (built in, and any registered
    and loaded): two documents of one of them with one key are copies of one session."""
    names = {name for name, (_, traits) in BUILT_IN.items() if traits.session_ids}
    names |= {name for name, kind in (_loaded or {}).items() if kind.traits().session_ids}
    return sorted(names)


def traits_of(name: str | None) -> KindTraits:
    """What a kind needs from show, retrieval and status, by name, without loading a parser.

    A name this memdex has no kind for (``files``, a plugin's kind not loaded here) gets the
    defaults: its documents are read from the index, where their text always is.
    """
    if _loaded is not None and name in _loaded:
        return _loaded[name].traits()
    declared = BUILT_IN.get(name or "")
    return declared[1] if declared else KindTraits()


def resume_command(kind: str | None, key: str, meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """The command that resumes a document's agent session (``Resume.command``), where its
    kind has one; None for any other document."""
    how = traits_of(kind).resume
    return how.command(key, meta) if how is not None else None


def companion_owner(path: str) -> str | None:
    """The file whose companion ``path`` is (``SourceKind.companions``: a SQLite database's
    ``-wal``), or None: the watcher reports a change of one as a change of the other."""
    for kind in sources().values():
        for suffix in kind.companions:
            if path.endswith(suffix) and kind.claims(os.path.basename(path[: -len(suffix)])):
                return path[: -len(suffix)]
    return None


def get_kind(name: str) -> SourceKind:
    known = sources()
    try:
        return known[name]
    except KeyError:
        listed = ", ".join(sorted(known))
        raise InvalidParameter(f"Unknown kind {name!r}: use one of {listed}.") from None


def detect_root_kind(root: Path) -> str | None:
    "The kind that claims this folder as a whole, or None: then each file picks its kind."
    for kind in sources().values():
        if kind.claims_root(root):
            return kind.name
    return None


def kinds_for(rel_path: str, forced: str | None, root_kind: str | None) -> list[SourceKind]:
    "Which kinds may read this file, best first; empty when it is not a source file."
    known = sources()
    if forced:
        kind = get_kind(forced)
        return [kind] if kind.accepts(rel_path) else []
    if root_kind:
        kind = known[root_kind]
        if kind.accepts(rel_path):
            return [kind]
    return [k for k in known.values() if k.claims(rel_path)]


__all__ = [
    "BUILT_IN",
    "sources",
    "KindTraits",
    "SourceFile",
    "SourceKind",
    "companion_owner",
    "detect_root_kind",
    "get_kind",
    "kinds_for",
    "register",
    "resume_command",
    "session_kinds",
    "traits_of",
]
