"""What a server of an index writes about itself, beside the index (``<index>.serve.json``): the
server writes it (``server``), ``memdex status`` reads it (``doors.status``). It stays after
the server stops."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def state_path(db_path: Path) -> Path:
    return Path(f"{db_path}.serve.json")


def read_state(db_path: Path) -> dict[str, Any] | None:
    "What the last server of this index wrote about itself (it stays after it stops)."
    try:
        data = json.loads(state_path(db_path).read_text())
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None
