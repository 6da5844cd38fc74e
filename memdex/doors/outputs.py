"""Files memdex writes on request: a timestamped results file, and retrieved sources.

``--output-file`` writes what the terminal shows, as markdown with a timestamp. ``--retrieve
DIR`` copies the files behind the results (for chats, writes the cited passages, since an
export holds many conversations) into DIR with a ``manifest.json``, under a token budget.

It never reads outside the indexed roots: each source is resolved (symlinks and ``..``) and
must lie inside a root; anything else is skipped and named in the manifest. It never writes
inside an indexed root either -- the results file or copies would be indexed as memories,
or overwrite one -- and it writes by rename or exclusive create, so a symlink planted where
a file is about to go is replaced, not followed. What it writes holds memory text, and the
path may come from an agent over MCP, so it never replaces a file it did not write: a
results file is ``.md`` and replaces only a results file, and a retrieve folder's
``manifest.json`` only memdex's own. Nor does it write where a coding agent reads its
instructions or settings (``.claude/``, ``.codex/``, ``.gemini/``, ``.github/``,
``AGENTS.md``, ``CLAUDE.md``...: ``agents.instructions``), whoever asks: a ``.md`` there
would be an instruction the agent runs in its next session.
"""

from __future__ import annotations

import json
import os
import re
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from memdex import __version__
from memdex.agents.instructions import refusal
from memdex.answer.sources import Source
from memdex.doors.render import source_line
from memdex.errors import InvalidParameter
from memdex.ingest import traits_of
from memdex.models import est_tokens
from memdex.store.paths import OutsideRoots, inside, open_inside, roots
from memdex.utils import Budget, atomic_write


def now() -> datetime:
    return datetime.now(UTC).replace(microsecond=0)


def slug(text: str, limit: int = 48) -> str:
    words = re.findall(r"[^\W_]+", text.casefold())
    return "-".join(words)[:limit].strip("-") or "query"


def default_folder(conn: sqlite3.Connection, what: str) -> Path:
    """Where results files (``what="results"``) and retrieved sources (``"retrieved"``) go
    when no place is given: a folder beside the index, ``~/.local/share/memdex/`` by default."""
    from memdex.store import db

    path = db.path_of(conn) or db.default_db_path()
    return path.parent / what


def default_retrieval_dir(conn: sqlite3.Connection, query: str) -> str:
    "A new timestamped folder for retrieved sources, under ``default_folder(conn, 'retrieved')``."
    return str(default_folder(conn, "retrieved") / f"{now():%Y%m%d-%H%M%S}-{slug(query)}")


def write_results(conn: sqlite3.Connection, target: str, query: str, markdown: str) -> Path:
    """Write the results as markdown: to ``target``, or, when it is a folder, to a new
    timestamped file in it. Returns the path written."""
    when = now()
    given = Path(target).expanduser()
    # Checked and written as the OS resolves it: "link/../x.md" lies beside the link's target.
    # A results file itself is not followed if it is a symlink (atomic_write replaces it).
    if given.is_dir() or target.endswith(("/", os.sep)):
        path = folder = Path(os.path.realpath(given))
    else:
        path = Path(os.path.realpath(given.parent)) / given.name
        folder = path.parent
    _not_in_a_root(conn, folder if folder == path else path, "--output-file", target)
    _not_for_agents(folder if folder == path else path, "--output-file", target)
    head = f"<!-- memdex {__version__}, {when.isoformat()}, query: {_comment(query)} -->\n\n"
    data = (head + markdown + "\n").encode("utf-8")
    try:
        if folder == path:
            path.mkdir(parents=True, exist_ok=True)
            return _create_new(path, f"memdex-{when:%Y%m%d-%H%M%S}-{slug(query)}", ".md", data)
        if not folder.is_dir():
            problem = "is not a folder" if folder.exists() else "does not exist; create it first"
            raise InvalidParameter(f"--output-file {target}: {folder} {problem}.")
        _check_results_file(path, target)
        atomic_write(path, data)
    except OSError as exc:
        raise InvalidParameter(f"--output-file {target}: cannot write it ({exc.strerror or exc}).") from exc
    return path


def _check_results_file(path: Path, target: str) -> None:
    """A results file is markdown, and replaces only a results file memdex wrote.

    The text written holds memory text, which anyone may have written, and the path may come
    from an agent whose model read that text: so no ``~/.bashrc``, ``authorized_keys`` or
    crontab can be (over)written with it, whoever asked.
    """
    if path.suffix.lower() not in (".md", ".markdown"):
        raise InvalidParameter(
            f"--output-file {target}: a results file is markdown; give a name ending in .md, or a folder."
        )
    if path.is_file() and not path.is_symlink():
        with open(path, "rb") as f:
            ours = f.read(len(RESULTS_MARK)) == RESULTS_MARK
        if not ours:
            raise InvalidParameter(
                f"--output-file {target}: that file exists and memdex did not write it; memdex "
                "replaces only its own results files. Give a new name, or a folder."
            )


RESULTS_MARK = b"<!-- memdex "  # the first bytes of every results file


def _comment(text: str) -> str:
    "Text safe inside an HTML comment: no ``--`` can close it."
    return repr(text).replace("--", "- -")


def _not_in_a_root(conn: sqlite3.Connection, path: Path, option: str, given: str) -> None:
    if inside(str(path), roots(conn)):
        raise InvalidParameter(
            f"{option} {given} is inside an indexed root, where it would be indexed as a memory "
            "(or overwrite one); choose a place outside the roots."
        )


def _not_for_agents(path: Path, option: str, given: str) -> None:
    "Refuse a place a coding agent reads instructions or settings from (agents.instructions)."
    why = refusal(path)
    if why:
        raise InvalidParameter(
            f"{option} {given}: {why}. memdex writes no memory text where an agent would read it "
            "as instructions in its next session; choose a place outside agents' folders."
        )


def retrieve(
    conn: sqlite3.Connection,
    sources: list[Source],
    target: str,
    *,
    query: str,
    max_tokens: int | None = None,
) -> dict[str, Any]:
    """Copy each source into ``target`` (markdown kinds: the file; conversations: the passages)
    until ``max_tokens`` would be passed; write ``manifest.json``; return the manifest."""
    allowed = roots(conn)
    folder = Path(os.path.realpath(Path(target).expanduser()))  # as the OS resolves it (write_results)
    _not_in_a_root(conn, folder, "--retrieve", target)
    _not_for_agents(folder, "--retrieve", target)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InvalidParameter(f"--retrieve {target}: cannot create the folder ({exc.strerror}).") from exc
    _check_manifest(folder / "manifest.json", target)
    files: list[dict[str, Any]] = []
    skipped: list[dict[str, Any]] = []
    budget = Budget(max_tokens)
    for s in sources:
        h = s.hit
        entry = {"n": s.n, "id": h.id, "title": h.title, "kind": h.kind, "source": h.path}
        name = _name(s)
        if not inside(h.path, allowed):
            skipped.append({**entry, "reason": "outside the indexed roots"})
            continue
        if inside(str(folder / name), allowed):  # a file root that sits inside the folder
            skipped.append({**entry, "reason": f"{folder / name} is an indexed file"})
            continue
        why = refusal(folder / name)  # the folder swapped for a symlink into an agent's since
        if why:
            skipped.append({**entry, "reason": why})
            continue
        try:
            data, mode = _content(s, allowed)
        except OutsideRoots:  # swapped for a symlink out of the roots after the check above
            skipped.append({**entry, "reason": "outside the indexed roots"})
            continue
        except OSError as exc:
            skipped.append({**entry, "reason": f"cannot read it ({exc.strerror or exc})"})
            continue
        tokens = est_tokens(len(data))
        if not budget.take(tokens):
            skipped.append({**entry, "reason": f"~{tokens:,} tokens would pass --max-tokens {max_tokens:,}"})
            continue
        atomic_write(folder / name, data, mode)
        files.append(
            {
                **entry,
                "file": name,
                "size_bytes": len(data),
                "est_tokens": tokens,
                "whole_file": traits_of(h.kind).one_document_per_file,
                "locations": s.locations,
                "why": s.why_cited or h.why_relevant["summary"],
            }
        )
    manifest = {
        "memdex": __version__,
        "created": now().isoformat(),
        "query": query,
        "folder": str(folder.resolve()),
        "max_tokens": max_tokens,
        "total_tokens": budget.spent,
        "files": files,
        "skipped": skipped,
    }
    if inside(str(folder / "manifest.json"), allowed):
        raise InvalidParameter(
            f"--retrieve {target}: its manifest.json is an indexed file; choose another folder."
        )
    atomic_write(
        folder / "manifest.json", (json.dumps(manifest, indent=2, ensure_ascii=False) + "\n").encode()
    )
    return manifest


def _check_manifest(path: Path, target: str) -> None:
    "A folder retrieved into before keeps memdex's manifest; any other manifest.json stays."
    if not path.is_file() or path.is_symlink():
        return  # none yet, or a symlink: replaced by rename, never followed
    try:
        with open(path, "rb") as f:
            data = json.loads(f.read(1_000_000))
    except (OSError, ValueError):
        data = None
    if not (isinstance(data, dict) and "memdex" in data and "files" in data):
        raise InvalidParameter(
            f"--retrieve {target}: it holds a manifest.json memdex did not write; choose an empty "
            "folder, or one memdex retrieved into before."
        )


def _content(s: Source, allowed: list[str]) -> tuple[bytes, int | None]:
    "What to write for a source, and the file mode to give it (a copy keeps its source's)."
    h = s.hit
    if traits_of(h.kind).one_document_per_file:
        with open_inside(h.path, allowed) as f:
            return f.read(), os.fstat(f.fileno()).st_mode & 0o777
    parts = [f"# {h.title}", "", f"{source_line(h)} · from {h.path}"]
    for p in s.passages:
        parts += ["", f"## {p.location}", "", p.text]
    return ("\n".join(parts) + "\n").encode("utf-8"), None


def _name(s: Source) -> str:
    base = (
        os.path.basename(s.hit.path)
        if traits_of(s.hit.kind).one_document_per_file
        else slug(s.hit.title) + ".md"
    )
    base = base.lstrip(".") or "source.md"
    return f"{s.n:02d}-{base}"


def _create_new(folder: Path, stem: str, suffix: str, data: bytes) -> Path:
    "A new file in ``folder`` (never an existing one): stem.md, else stem-2.md, stem-3.md..."
    for n in range(1, 1000):
        path = folder / f"{stem}{'' if n == 1 else f'-{n}'}{suffix}"
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return path
    raise InvalidParameter(f"--output-file {folder}: too many results files named {stem}*{suffix}.")
