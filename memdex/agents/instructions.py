"""Where coding agents read their instructions and settings: places memdex never writes to.

What memdex writes on request (a results file, retrieved sources) holds memory text that
anyone may have written (a pasted web page, a chat), and its path may come from a model that
read that text. A ``.md`` file under ``~/.claude/commands/``, ``.claude/skills/``,
``~/.gemini/commands/`` or a new ``AGENTS.md`` becomes instructions an agent follows in its
next session; so :func:`refusal` names any such place, whoever asked.

A path is checked as given (absolute, ``~`` expanded) and resolved (symlinks and ``..``), its
names compared case-insensitively (macOS and Windows file systems ignore case); the agents'
own homes (``~/.claude`` where it points, ``$CLAUDE_CONFIG_DIR``, ``$CODEX_HOME``,
``$GEMINI_CLI_HOME/.gemini``) count wherever they are, and so does memdex's own Claude Code
plugin folder.
"""

from __future__ import annotations

import os
from pathlib import Path

from memdex.agents import PLUGIN_DIR

# A folder of one of these names, anywhere in a path: an agent reads instructions from it
# (commands, agents, skills, prompts, rules, hooks) or its settings (MCP servers, approvals).
FOLDERS = {
    ".claude": "Claude Code",
    ".codex": "Codex",
    ".gemini": "Gemini CLI",
    ".github": "GitHub Copilot",  # copilot-instructions.md, instructions/, prompts/, agents/
    ".copilot": "GitHub Copilot CLI",
    ".agents": "Codex and other agents (skills)",
    ".cursor": "Cursor",
    ".opencode": "opencode",
    ".windsurf": "Windsurf",
    ".clinerules": "Cline",
    ".roo": "Roo Code",
    ".kiro": "Kiro",
    ".continue": "Continue",
    ".junie": "Junie",
}
# A file of one of these names, in any folder: an agent reads it as instructions.
FILES = {
    "agents.md": "Codex, Copilot and others",
    "agents.override.md": "Codex",
    "agent.md": "agents that read AGENT.md",
    "claude.md": "Claude Code",
    "claude.local.md": "Claude Code",
    "gemini.md": "Gemini CLI",
    "copilot-instructions.md": "GitHub Copilot",
    ".cursorrules": "Cursor",
    ".windsurfrules": "Windsurf",
}
# Folders under ~/.config that agents keep their settings and commands in.
CONFIG_FOLDERS = {"opencode": "opencode"}


def agent_homes() -> list[tuple[Path, str]]:
    """The agents' own folders in the home folder (where they point to, when symlinked: dotfiles
    kept elsewhere) and named by their variables, wherever they are; and memdex's plugin."""
    homes = [(PLUGIN_DIR, "memdex's Claude Code plugin")]
    homes += [(Path.home() / name, agent) for name, agent in FOLDERS.items() if name != ".github"]
    for variable, agent, under in (
        ("XDG_CONFIG_HOME", "opencode", "opencode"),
        ("CLAUDE_CONFIG_DIR", "Claude Code", ""),
        ("CODEX_HOME", "Codex", ""),
        ("GEMINI_CLI_HOME", "Gemini CLI", ".gemini"),
        ("COPILOT_HOME", "GitHub Copilot CLI", ""),
    ):
        value = os.environ.get(variable)
        if value:
            homes.append((Path(value).expanduser() / under, f"{agent} (${variable})"))
    return homes


def refusal(path: str | os.PathLike[str]) -> str | None:
    """Why memdex must not write ``path`` (a file or a folder), or None: the agent's folder or
    instruction file it lies in or is."""
    given = Path(path).expanduser()
    # realpath of the path as given: the OS follows a symlink before "..", so "link/../x" is
    # beside the link's target, not beside the link (abspath would drop "link/.." as text)
    resolved = Path(os.path.realpath(given))
    for candidate in dict.fromkeys((Path(os.path.abspath(given)), resolved)):
        why = _refusal(candidate)
        if why:
            return why
    return None


def _refusal(path: Path) -> str | None:
    names = [part.casefold() for part in path.parts]
    for n, name in enumerate(names):
        if name in FOLDERS:
            return f"{Path(*path.parts[: n + 1])} is where {FOLDERS[name]} reads instructions and settings"
        if name == ".config" and n + 1 < len(names) and names[n + 1] in CONFIG_FOLDERS:
            return f"{Path(*path.parts[: n + 2])} is where {CONFIG_FOLDERS[names[n + 1]]} reads its settings"
    if names and names[-1] in FILES:
        return f"{path.name} is a file {FILES[names[-1]]} reads as instructions"
    for home, agent in agent_homes():
        for form in dict.fromkeys((Path(os.path.abspath(home)), Path(os.path.realpath(home)))):
            if _within(path, form):
                return f"{form} is where {agent} reads instructions and settings"
    return None


def _within(path: Path, folder: Path) -> bool:
    "``path`` is ``folder`` or under it, comparing names case-insensitively."
    inner = [p.casefold() for p in path.parts]
    outer = [p.casefold() for p in folder.parts]
    return inner[: len(outer)] == outer
