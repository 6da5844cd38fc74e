"""Merging memdex's entry into an agent's configuration file without losing what is there.

JSON files (Claude Code's and Gemini CLI's settings.json) are read, changed key by key and
written back whole, in the order their keys had. Codex's config.toml is edited as text, so
its comments, layout and other tables stay as they were: memdex's own table is cut out and
written again at the end, and the result is read back with ``tomllib`` and must equal the
old file's data with only memdex's table changed, else nothing is written. Before a file
changes, a copy of it is kept beside it (``<name>.<time>.bak``); writes are atomic.
"""

from __future__ import annotations

import copy
import json
import os
import re
import tomllib
from datetime import datetime
from pathlib import Path
from typing import Any

from memdex.errors import MemdexError
from memdex.utils import atomic_write


class ConfigError(MemdexError):
    "An agent's configuration file memdex cannot merge into safely: nothing was written"


def read_json(path: Path) -> dict[str, Any]:
    "The JSON object in ``path``; {} when the file is missing or empty."
    if not path.exists():
        return {}
    text = path.read_text("utf-8")
    if not text.strip():
        return {}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(
            f"{path} is not JSON memdex can read ({exc}); fix it, or add memdex's entry by hand "
            "(memdex setup ... --print shows it). Nothing was written."
        ) from exc
    if not isinstance(data, dict):
        raise ConfigError(f"{path} holds no JSON object; nothing was written.")
    return data


def json_text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def read_toml(path: Path) -> tuple[str, dict[str, Any]]:
    "The text of ``path`` and its data; ('', {}) when missing."
    if not path.exists():
        return "", {}
    text = path.read_text("utf-8")
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path} is not TOML memdex can read ({exc}); nothing was written.") from exc


def toml_value(value: Any) -> str:
    "A string, or a list of strings, as TOML (JSON's string escapes are TOML's too)."
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(f"memdex writes only strings and lists of strings to TOML, not {value!r}")


def toml_table(header: str, values: dict[str, Any], comment: str) -> str:
    "A table, its comment above it; a value that is a dict becomes a sub-table after it."
    return "\n".join([f"# {comment}", *_table_lines(header, values)]) + "\n"


def _table_lines(header: str, values: dict[str, Any], top: bool = True) -> list[str]:
    pairs = [f"{k} = {toml_value(v)}" for k, v in values.items() if not isinstance(v, dict)]
    lines = [f"[{header}]", *pairs] if pairs or top else []  # a table of tables needs no header
    for key, value in values.items():
        if isinstance(value, dict):
            lines += _table_lines(f"{header}.{_toml_key(key)}", value, top=False)
    return lines


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else json.dumps(key, ensure_ascii=False)


_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(?:#.*)?$")


def _dotted(header: str) -> list[str]:
    "A table header's keys: mcp_servers.memdex, \"mcp_servers\".'memdex' and spaced forms alike."
    parts = re.findall(r'"((?:[^"\\]|\\.)*)"|\'([^\']*)\'|([A-Za-z0-9_-]+)', header)
    return [a or b or c for a, b, c in parts]


def cut_toml_table(text: str, keys: list[str], marker: str) -> str:
    """``text`` without the table ``keys`` (and its sub-tables), nor the comment line memdex
    wrote above it (one starting with ``marker``)."""
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    inside = False
    for line in lines:
        header = _HEADER.match(line)
        if header:
            inside = _dotted(header.group(1))[: len(keys)] == keys
            if inside and out and out[-1].startswith(f"# {marker}"):
                out.pop()
        if not inside:
            out.append(line)
    while out and not out[-1].strip():  # the blank lines memdex put before its table
        out.pop()
    return "".join(out) if out else ""


def merged_toml(path: Path, keys: list[str], values: dict[str, Any] | None, comment: str, marker: str) -> str:
    """The text of ``path`` with the table ``keys`` set to ``values`` (None: removed),
    checked by reading it back. Raises ConfigError when the file holds that table in a form
    this does not edit (an inline table, dotted keys) or the result would differ elsewhere."""
    text, data = read_toml(path)
    expected = copy.deepcopy(data)
    parent = expected
    for key in keys[:-1]:
        parent = parent.setdefault(key, {})
        if not isinstance(parent, dict):
            raise ConfigError(f"{path}: {'.'.join(keys[:-1])} is not a table; nothing was written.")
    parent.pop(keys[-1], None)
    if values is not None:
        parent[keys[-1]] = values
    elif not parent and keys[0] not in _present_after_cut(text, keys, marker):
        expected.pop(keys[0], None)
    new = cut_toml_table(text, keys, marker)
    if values is not None:
        new = (new.rstrip("\n") + "\n\n" if new.strip() else "") + toml_table(".".join(keys), values, comment)
    try:
        got = tomllib.loads(new)
    except tomllib.TOMLDecodeError as exc:
        got = {"error": str(exc)}
    if got != expected:
        raise ConfigError(
            f"{path} defines {'.'.join(keys)} in a form memdex does not edit (an inline table or "
            "dotted keys); change it by hand (memdex setup ... --print shows the table). Nothing was written."
        )
    return new


def _present_after_cut(text: str, keys: list[str], marker: str) -> dict[str, Any]:
    try:
        return tomllib.loads(cut_toml_table(text, keys, marker))
    except tomllib.TOMLDecodeError:
        return {}


def write(path: Path, text: str) -> str | None:
    """Write ``text`` to ``path`` (atomically, keeping its mode), a copy of the old file kept
    beside it first. Returns the backup's path, or None when there was no file to keep. A
    symlinked file (dotfiles kept in a repository) is written where it points."""
    path = Path(os.path.realpath(path))
    backup = None
    mode = None
    if path.exists():
        old = path.read_bytes()
        mode = path.stat().st_mode & 0o777
        stamp = datetime.now().strftime("%Y%m%dT%H%M%S")
        target = path.with_name(f"{path.name}.{stamp}.bak")
        n = 1
        while target.exists():
            n += 1
            target = path.with_name(f"{path.name}.{stamp}-{n}.bak")
        atomic_write(target, old, mode=mode)
        backup = str(target)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text, mode=mode)
    return backup
