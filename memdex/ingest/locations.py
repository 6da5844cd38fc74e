"""Where coding agents keep their sessions by default: `memdex kinds` lists it, `memdex
index --agents` indexes what exists.

Each kind declares its ``locations`` (``SourceKind.locations``): ``~`` is $HOME, and
``$VAR/x | ~/y`` means $VAR/x when $VAR is set, else ~/y (Claude Code's CLAUDE_CONFIG_DIR,
Codex's CODEX_HOME, XDG_DATA_HOME for OpenCode).
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

_VAR = re.compile(r"\$(\w+)")


def expand(location: str) -> tuple[str, Path] | None:
    "The alternative of ``location`` in use here, and the path it names; None if none is."
    for choice in (part.strip() for part in location.split("|")):
        if all(os.environ.get(name) for name in _VAR.findall(choice)):
            return choice, Path(os.path.expanduser(os.path.expandvars(choice)))
    return None


def agent_locations() -> list[dict[str, Any]]:
    """Every kind's default locations on this machine, in the registry's order: ``kind``,
    ``location`` (as declared, the alternative in use), ``path`` and whether it ``exists``
    (a folder, or a single file: OpenCode's opencode.db)."""
    from memdex.ingest import sources

    out = []
    for kind in sources().values():
        for location in kind.locations:
            chosen = expand(location)
            if chosen is not None:
                shown, path = chosen
                out.append({"kind": kind.name, "location": shown, "path": str(path), "exists": path.exists()})
    return out
