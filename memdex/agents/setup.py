"""``memdex setup AGENT``: what each coding agent reads to get memdex, and where.

- **claude-code**: the memdex plugin (``memdex/agents/claude-plugin``, a marketplace folder)
  registered in Claude Code's user settings (``$CLAUDE_CONFIG_DIR/settings.json``, else
  ``~/.claude/settings.json``): the marketplace as a directory, the plugin enabled, its
  options set to this memdex and this index, and memdex's three read-only tools allowed
  without a prompt. Claude Code installs the plugin from there on its next start.
- **codex**: ``[mcp_servers.memdex]`` in ``$CODEX_HOME/config.toml`` (else ``~/.codex``):
  every tool asks (``default_tools_approval_mode = "prompt"``) but the read-only ones
  (``tools.<tool>.approval_mode = "approve"``).
- **gemini**: ``mcpServers.memdex`` in ``$GEMINI_CLI_HOME/.gemini/settings.json`` (else
  ``~/.gemini/settings.json``), not trusted, and the read-only tools in ``tools.allowed``.

Every path written is absolute: the agent starts memdex from anywhere, with another PATH.
Each agent's server runs ``memdex mcp --save-tool``: search_knowledge_base writes no files,
and save_results, which does, is never allowed without asking (docs/agents.md, "What runs
without asking").
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memdex.agents import PLUGIN_DIR
from memdex.agents.configs import ConfigError, json_text, merged_toml, read_json, toml_table, write
from memdex.errors import MemdexError
from memdex.store import db

AGENTS = ("claude-code", "codex", "gemini")
PLUGIN_ID = "memdex@memdex"  # plugin@marketplace
SERVER = "memdex"
# The tools an agent may run without asking: those that write no file, on a server run with
# --save-tool (save_results, which writes, asks every time; tests/test_agents_setup.py checks
# this list against the server's tools).
TOOLS = ("search_knowledge_base", "get_document", "index_status")
SERVER_ARGS = ["mcp", "--save-tool"]
# Claude Code names a plugin's MCP tools mcp__plugin_<plugin>_<server>__<tool>.
CLAUDE_TOOLS = [f"mcp__plugin_memdex_{SERVER}__{tool}" for tool in TOOLS]
# Gemini CLI names them mcp_<server>_<tool> in its policies (tools.allowed).
GEMINI_TOOLS = [f"mcp_{SERVER}_{tool}" for tool in TOOLS]
MARKER = "memdex setup"  # starts the comment memdex writes above its TOML table


@dataclass
class Change:
    "What ``memdex setup`` writes for one agent: the file, and the entries it sets there."

    agent: str
    path: Path
    entries: dict[tuple[str, ...], Any]  # JSON: key path -> value; TOML: one table
    allow: list[str] = field(default_factory=list)  # JSON list items added to the list at allow_at
    allow_at: tuple[str, ...] = ("permissions", "allow")
    command: list[str] = field(default_factory=list)
    db: str = ""

    @property
    def is_toml(self) -> bool:
        return self.path.suffix == ".toml"

    @property
    def snippet(self) -> str:
        "What --print shows: a file the agent reads as it is, holding only memdex's entries."
        if self.is_toml:
            ((keys, values),) = self.entries.items()
            return toml_table(".".join(keys), values, _comment(self))
        data: dict[str, Any] = {}
        for keys, value in self.entries.items():
            _set(data, keys, value)
        if self.allow:
            _set(data, self.allow_at, list(self.allow))
        return json_text(data)


def memdex_command() -> list[str]:
    """This memdex as a command an agent can start from anywhere: the ``memdex`` script beside
    this Python (a venv's bin), else the one on the PATH, else ``python -m memdex``."""
    beside = Path(sys.executable).parent / "memdex"
    if beside.is_file() and os.access(beside, os.X_OK):
        return [str(beside.absolute())]
    found = shutil.which("memdex")
    if found:
        return [os.path.abspath(found)]
    return [os.path.abspath(sys.executable), "-m", "memdex"]


def config_path(agent: str) -> Path:
    "The file ``agent`` reads memdex's entry from, honouring the agents' own home variables."
    home = Path.home()
    if agent == "claude-code":
        base = os.environ.get("CLAUDE_CONFIG_DIR")
        return (Path(base).expanduser() if base else home / ".claude") / "settings.json"
    if agent == "codex":
        base = os.environ.get("CODEX_HOME")
        return (Path(base).expanduser() if base else home / ".codex") / "config.toml"
    if agent == "gemini":
        base = os.environ.get("GEMINI_CLI_HOME")
        return (Path(base).expanduser() if base else home) / ".gemini" / "settings.json"
    raise MemdexError(f"unknown agent {agent!r}: memdex setup knows {', '.join(AGENTS)}")


def plan(agent: str, db_path: str | os.PathLike[str] | None) -> Change:
    "What setup writes for ``agent``, with this memdex and the index ``db_path`` (absolute)."
    command = memdex_command()
    index = str(db.resolve_db_path(db_path))
    path = config_path(agent)
    server = {"command": command[0], "args": [*command[1:], "--db", index, *SERVER_ARGS]}
    if agent == "claude-code":
        if len(command) > 1:
            raise MemdexError(
                "The Claude Code plugin runs the memdex command, and none is installed beside this "
                f"Python ({sys.executable}) or on the PATH: pip install memdex, then run setup again."
            )
        entries: dict[tuple[str, ...], Any] = {
            ("extraKnownMarketplaces", "memdex"): {
                "source": {"source": "directory", "path": str(PLUGIN_DIR)}
            },
            ("enabledPlugins", PLUGIN_ID): True,
            ("pluginConfigs", PLUGIN_ID): {"options": {"memdex": command[0], "db": index}},
        }
        return Change(agent, path, entries, allow=list(CLAUDE_TOOLS), command=command, db=index)
    if agent == "codex":
        # Codex runs the read-only tools without asking, as Claude Code's allow list above
        # does; any other (save_results, and whatever a later memdex adds) asks first.
        codex = {
            **server,
            "default_tools_approval_mode": "prompt",
            "tools": {tool: {"approval_mode": "approve"} for tool in TOOLS},
        }
        return Change(agent, path, {("mcp_servers", SERVER): codex}, command=command, db=index)
    # Not `trust`, which would run every tool of the server without a confirmation, the one
    # that writes files too: tools.allowed names the read-only ones (which also offers them in
    # a non-interactive run); save_results asks, or is not offered without a person to ask.
    return Change(
        agent,
        path,
        {("mcpServers", SERVER): server},
        allow=list(GEMINI_TOOLS),
        allow_at=("tools", "allowed"),
        command=command,
        db=index,
    )


def describe(change: Change) -> str:
    return f"memdex setup {change.agent}: merge into {change.path}"


def apply(change: Change, remove: bool = False) -> list[str]:
    "Write (or with ``remove``, take out) memdex's entries; the lines to tell the user."
    if change.is_toml:
        ((keys, values),) = change.entries.items()
        new = merged_toml(change.path, list(keys), None if remove else values, _comment(change), MARKER)
        old = change.path.read_text("utf-8") if change.path.exists() else ""
    else:
        data = read_json(change.path)
        old = json_text(data) if change.path.exists() else ""
        for keys, value in change.entries.items():
            if remove:
                _unset(data, keys)
            else:
                _set(data, keys, value)
        _merge_list(data, change.allow_at, change.allow, remove)
        new = json_text(data)
    if remove and not change.path.exists():
        return [f"{change.path} does not exist: nothing to remove."]
    if new == old:
        state = "has no memdex entry" if remove else "has these entries"
        return [f"{change.path} already {state}: unchanged."]
    backup = write(change.path, new)
    lines = [f"{'Removed memdex from' if remove else 'Wrote memdex into'} {change.path}"]
    if backup:
        lines.append(f"The file as it was: {backup}")
    if not remove:
        lines += _next_steps(change)
    return lines


def _next_steps(change: Change) -> list[str]:
    lines = [f"memdex: {' '.join(change.command)}; index: {change.db}"]
    if not Path(change.db).exists():
        lines.append(
            "No index there yet: run memdex index PATH (memdex index --agents for your agents' sessions)."
        )
    if change.agent == "claude-code":
        lines.append(
            f"Claude Code installs the memdex plugin from {PLUGIN_DIR} when it next starts: "
            "/plugin lists it; /memdex:search and /memdex:ask search from a session."
        )
    elif change.agent == "codex":
        lines.append("Codex starts memdex's MCP server in its next session: codex mcp list shows it.")
    else:
        lines.append("Gemini CLI starts memdex's MCP server in its next session: gemini mcp list shows it.")
    return lines


def _comment(change: Change) -> str:
    return (
        f"{MARKER} {change.agent}: memdex's MCP server on {change.db} "
        f"(memdex setup {change.agent} --remove takes it out)"
    )


def _set(data: dict[str, Any], keys: tuple[str, ...], value: Any) -> None:
    for key in keys[:-1]:
        nxt = data.setdefault(key, {})
        if not isinstance(nxt, dict):
            raise ConfigError(f"{key} in the agent's settings is not an object; nothing was written.")
        data = nxt
    data[keys[-1]] = value


def _unset(data: dict[str, Any], keys: tuple[str, ...]) -> None:
    parents = [data]
    for key in keys[:-1]:
        nxt = parents[-1].get(key)
        if not isinstance(nxt, dict):
            return
        parents.append(nxt)
    parents[-1].pop(keys[-1], None)
    for depth in range(len(parents) - 1, 0, -1):  # drop the objects memdex's entry was alone in
        if not parents[depth]:
            parents[depth - 1].pop(keys[depth - 1], None)


def _merge_list(data: dict[str, Any], keys: tuple[str, ...], items: list[str], remove: bool) -> None:
    if not items:
        return
    parent = data
    for key in keys[:-1]:
        if not isinstance(parent.get(key, {}), dict):
            raise ConfigError(f"{key} in the agent's settings is not an object; nothing was written.")
        parent = parent.setdefault(key, {}) if not remove else parent.get(key, {})
    have = parent.get(keys[-1], [])
    if not isinstance(have, list):
        raise ConfigError(f"{'.'.join(keys)} in the agent's settings is not a list; nothing was written.")
    if remove:
        kept = [item for item in have if item not in items]
        if kept:
            parent[keys[-1]] = kept
        elif keys[-1] in parent:
            del parent[keys[-1]]
            if not parent and keys[0] in data and data[keys[0]] is parent:
                del data[keys[0]]
    else:
        parent[keys[-1]] = have + [item for item in items if item not in have]
