"""memdex: local full-text search over AI agent memories, notes and chat archives.

The public API is one object, loaded on first use so that ``memdex search`` imports only
what it needs::

    import memdex

    with memdex.Index("memdex.db") as index:
        index.index("~/.claude/mnemonic")
        for hit in index.search("deploy key rotation").hits:
            print(hit.title, hit.path)
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing stays unimported: `memdex search` asks a server before anything else
if TYPE_CHECKING:
    from typing import Any

__version__ = "0.1.0"

_API = {
    "Index": ("memdex.doors.api", "Index"),
    "Engine": ("memdex.query.engine", "Engine"),
    "SearchRequest": ("memdex.query.request", "SearchRequest"),
    "Filters": ("memdex.query.request", "Filters"),
    "MemdexError": ("memdex.errors", "MemdexError"),
}

__all__ = ["__version__", *_API]


def __getattr__(name: str) -> Any:
    if name not in _API:
        raise AttributeError(f"module 'memdex' has no attribute {name!r}")
    import importlib

    module, attr = _API[name]
    return getattr(importlib.import_module(module), attr)
