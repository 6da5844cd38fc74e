"""The Claude Code plugin tells the agent only what is true: every tool, parameter, command
and option its skill, subagent and commands name exists, and its manifests hang together.
(tests/test_agents_cli.py has the real Claude Code validate, install and run it.)"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import click
import pytest
import yaml

import memdex
from memdex.agents import PLUGIN_DIR
from memdex.agents.setup import CLAUDE_TOOLS, TOOLS
from memdex.doors.cli import cli
from memdex.doors.mcp_server import tool_parameters

TEXTS = sorted(PLUGIN_DIR.glob("*/**/*.md"))
REPO = Path(__file__).resolve().parent.parent
DOCUMENTED = "".join((REPO / page).read_text() for page in ("docs/mcp.md", "docs/search.md", "README.md"))


def parameters(tool: str) -> set[str]:
    return set(tool_parameters(tool))


def front_matter(path: Path) -> dict:
    head = path.read_text().split("---\n")[1]
    return yaml.safe_load(head)


def test_the_texts_are_there() -> None:
    names = {p.relative_to(PLUGIN_DIR).as_posix() for p in TEXTS}
    assert names == {
        "skills/memdex-search/SKILL.md",
        "agents/memory-searcher.md",
        "commands/search.md",
        "commands/ask.md",
    }


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
def test_every_tool_and_parameter_named_exists(path: Path) -> None:
    text = path.read_text()
    for tool in re.findall(r"mcp__plugin_memdex_memdex__(\w+)", text):
        assert tool in TOOLS, tool
    for tool in re.findall(r"`(\w+)\(", text):
        assert tool in TOOLS, f"{path.name} names a tool memdex has not: {tool}"
    everything = set().union(*(parameters(t) for t in TOOLS))
    # `name: value` and `name=value` in backticks are tool arguments
    named = set(re.findall(r"`(\w+)(?::|=) ?[^`\s][^`]*`", text))
    assert named, path.name
    assert named <= everything, f"{path.name}: {named - everything}"


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
def test_every_result_field_named_is_one_memdex_documents(path: Path) -> None:
    "Fields the agent is told to read (`estimated_tokens`, `why_relevant`...) are in docs/mcp.md, docs/search.md or the README."
    fields = set(re.findall(r"`([a-z]+_[a-z_]+|[a-z]+\.[a-z_]+)`", path.read_text())) - set(TOOLS)
    for name in fields:
        assert name.split(".")[-1] in DOCUMENTED, f"{path.name}: {name}"


@pytest.mark.parametrize("path", TEXTS, ids=lambda p: p.name)
def test_every_memdex_command_and_option_named_exists(path: Path) -> None:
    text = " ".join(path.read_text().split())  # a command may be wrapped across lines
    commands = re.findall(r"`(memdex [^`]+)`", text)
    for line in commands:
        words = shlex.split(line)
        command = cli.get_command(click.Context(cli), words[1])
        assert command is not None, line
        options = {o for p in command.params for o in p.opts}
        assert {w for w in words if w.startswith("--")} <= options, line


def test_the_skill_and_subagent_have_what_claude_code_reads() -> None:
    skill = front_matter(PLUGIN_DIR / "skills" / "memdex-search" / "SKILL.md")
    assert skill["name"] == "memdex-search" and len(skill["description"]) < 1024
    agent = front_matter(PLUGIN_DIR / "agents" / "memory-searcher.md")
    assert agent["name"] == "memory-searcher" and agent["model"] == "haiku"
    assert agent["tools"] == CLAUDE_TOOLS  # read-only: memdex's tools and nothing else
    for command in ("search", "ask"):
        head = front_matter(PLUGIN_DIR / "commands" / f"{command}.md")
        assert set(head["allowed-tools"].split(", ")) <= set(CLAUDE_TOOLS)
        assert "$ARGUMENTS" in (PLUGIN_DIR / "commands" / f"{command}.md").read_text()


def test_the_manifests_hang_together() -> None:
    market = json.loads((PLUGIN_DIR / ".claude-plugin" / "marketplace.json").read_text())
    plugin = json.loads((PLUGIN_DIR / ".claude-plugin" / "plugin.json").read_text())
    assert [(p["name"], p["source"]) for p in market["plugins"]] == [("memdex", "./")]
    assert plugin["name"] == market["name"] == "memdex"  # so its id is memdex@memdex
    assert plugin["version"] == memdex.__version__  # the package's version, written once (#36)
    assert set(plugin["userConfig"]) == {"memdex", "db"}
    servers = json.loads((PLUGIN_DIR / ".mcp.json").read_text())["mcpServers"]
    assert list(servers) == ["memdex"]  # mcp__plugin_memdex_memdex__<tool>
    hooks = json.loads((PLUGIN_DIR / "hooks" / "hooks.json").read_text())["hooks"]
    (start,) = hooks["SessionStart"]
    assert start["hooks"][0]["command"] == 'sh "${CLAUDE_PLUGIN_ROOT}/scripts/memdex.sh" context --hook'


def test_every_file_of_the_plugin_is_package_data() -> None:
    "A wheel carries the plugin whole: pyproject's patterns name every file (glob skips dot-folders)."
    import glob
    import tomllib

    patterns = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    # glob.glob as setuptools reads the patterns: ``*`` matches no name starting with a dot
    packaged = {
        Path(p) for pattern in patterns["memdex.agents"] for p in glob.glob(str(PLUGIN_DIR.parent / pattern))
    }
    files = {p for p in PLUGIN_DIR.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert files and files <= packaged, files - packaged
