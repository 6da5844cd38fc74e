"""Files memdex writes on request: a timestamped results file, and retrieved sources.

``--output-file`` writes what the terminal shows, as markdown with a timestamp. ``--retrieve
DIR`` copies the files behind the results (for chats, writes the cited passages, since an
export holds many conversations) into DIR with a ``manifest.json``, under a token budget.

It never reads outside the indexed roots: each source is resolved (symlinks and ``..``) and
must lie inside a root; anything else is skipped and named in the manifest. It never writes
into an indexed root either (the copies would be indexed again), and it replaces files by
rename, so a symlink planted in DIR is replaced, not followed.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
import tempfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from . import __version__
from .documents import MARKDOWN_KINDS
from .errors import InvalidParameter
from .models import est_tokens
from .paths import inside, roots
from .sources import Source


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def slug(text: str, limit: int = 48) -> str:
    words = re.findall(r"[^\W_]+", text.casefold())
    return "-".join(words)[:limit].strip("-") or "query"


def write_results(target: str, query: str, markdown: str) -> Path:
    """Write the results as markdown: to ``target``, or, when it is a folder, to a new
    timestamped file in it. Returns the path written."""
    when = now()
    path = Path(target).expanduser()
    if path.is_dir() or target.endswith(("/", os.sep)):
        path.mkdir(parents=True, exist_ok=True)
        path = path / f"memdex-{when:%Y%m%d-%H%M%S}-{slug(query)}.md"
    elif not path.parent.is_dir():
        raise InvalidParameter(
            f"--output-file {target}: folder {path.parent} does not exist; create it first."
        )
    head = f"<!-- memdex {__version__}, {when.isoformat()}, query: {query!r} -->\n\n"
    _replace(path, (head + markdown + "\n").encode("utf-8"))
    return path


def retrieve(
    conn: sqlite3.Connection,
    sources: list[Source],
    target: str,
    *,
    query: str,
    max_tokens: int | None = None,
    why: dict[int, str] | None = None,
) -> dict[str, Any]:
    """Copy each source into ``target`` (markdown kinds: the file; conversations: the passages)
    until ``max_tokens`` would be passed; write ``manifest.json``; return the manifest."""
    allowed = roots(conn)
    folder = Path(target).expanduser()
    if inside(str(folder), allowed):
        raise InvalidParameter(
            f"--retrieve {target} is inside an indexed root, where the copies would be indexed again; "
            "choose a folder outside it."
        )
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidParameter(f"--retrieve {target}: cannot create the folder ({exc.strerror}).") from exc
    files: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    total = 0
    for s in sources:
        h = s.hit
        entry = {"n": s.n, "id": h.id, "title": h.title, "kind": h.kind, "source": h.path}
        if not inside(h.path, allowed):
            skipped.append({**entry, "reason": "outside the indexed roots"})
            continue
        try:
            data = _content(s)
        except OSError as exc:
            skipped.append({**entry, "reason": f"cannot read it ({exc.strerror or exc})"})
            continue
        tokens = est_tokens(len(data))
        if max_tokens is not None and total + tokens > max_tokens:
            skipped.append({**entry, "reason": f"~{tokens:,} tokens would pass --max-tokens {max_tokens:,}"})
            continue
        name = _name(s)
        _replace(folder / name, data)
        total += tokens
        files.append(
            {
                **entry,
                "file": name,
                "size_bytes": len(data),
                "est_tokens": tokens,
                "whole_file": h.kind in MARKDOWN_KINDS,
                "locations": s.locations,
                "why": (why or {}).get(s.n) or s.why_cited or h.why_relevant["summary"],
            }
        )
    manifest = {
        "memdex": __version__,
        "created": now().isoformat(),
        "query": query,
        "folder": str(folder.resolve()),
        "max_tokens": max_tokens,
        "total_tokens": total,
        "files": files,
        "skipped": skipped,
    }
    _replace(folder / "manifest.json", (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode())
    return manifest


def _content(s: Source) -> bytes:
    h = s.hit
    if h.kind in MARKDOWN_KINDS:
        return Path(h.path).read_bytes()
    meta = " · ".join(x for x in [h.platform or h.kind, (h.date or "")[:10]] if x)
    parts = [f"# {h.title}", "", f"{meta} · from {h.path}"]
    for p in s.passages:
        parts += ["", f"## {p.location}", "", p.text]
    return ("\n".join(parts) + "\n").encode("utf-8")


def _name(s: Source) -> str:
    base = os.path.basename(s.hit.path) if s.hit.kind in MARKDOWN_KINDS else slug(s.hit.title) + ".md"
    base = base.lstrip(".") or "source.md"
    return f"{s.n:02d}-{base}"


def _replace(path: Path, data: bytes) -> None:
    "Write by rename: readers see the old file or the new one, and a symlink is not followed."
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".memdex-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
