"""memdex setup claude-code|codex|gemini: what each agent's file holds after it, on files that
already hold other servers, comments and settings (tests/test_agents_cli.py has the real
agents read them)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdex.agents import PLUGIN_DIR
from memdex.agents.setup import CLAUDE_TOOLS, SERVER_ARGS, TOOLS, memdex_command
from memdex.doors.cli import cli
from memdex.doors.mcp_server import tool_names, writes_files

CODEX_CONFIG = """\
# my Codex settings: keep these comments
model = "gpt-5.5"  # the default

[mcp_servers.other]   # another server, with a table of its own
command = "other-mcp"
args = ["--flag", "x"]

[mcp_servers.other.env]
TOKEN = "abc"

# profiles below
[profiles.fast]
model = "gpt-5.5-mini"
"""


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    "A home of its own for the agents' files; their own home variables unset."
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME", "GEMINI_CLI_HOME"):
        monkeypatch.delenv(name, raising=False)
    return home


def setup(*args: str, db: Path | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, [*(["--db", str(db)] if db else []), "setup", *args])
    return result.exit_code, result.stdout, result.stderr


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".*.bak"))


def test_codex_merge_keeps_other_servers_and_comments_and_remove_restores_the_file(
    home: Path, tmp_path: Path
) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG)
    db = tmp_path / "index.db"
    code, out, _ = setup("codex", db=db)
    assert code == 0, out
    text = config.read_text()
    assert text.startswith(CODEX_CONFIG)  # every line as it was, comments and layout included
    data = tomllib.loads(text)
    assert data["mcp_servers"]["other"] == {
        "command": "other-mcp",
        "args": ["--flag", "x"],
        "env": {"TOKEN": "abc"},
    }
    assert data["profiles"] == {"fast": {"model": "gpt-5.5-mini"}}
    assert data["mcp_servers"]["memdex"] == {
        "command": memdex_command()[0],
        "args": ["--db", str(db), "mcp", "--save-tool"],
        "default_tools_approval_mode": "prompt",  # save_results, which writes files, asks
        "tools": {tool: {"approval_mode": "approve"} for tool in TOOLS},
    }
    assert os.path.isabs(data["mcp_servers"]["memdex"]["command"])
    assert [b.read_text() for b in backups(config)] == [CODEX_CONFIG]
    # again: nothing changes, no new backup
    assert setup("codex", db=db)[0] == 0
    assert config.read_text() == text and len(backups(config)) == 1
    # another index replaces memdex's table, it does not add a second one
    setup("codex", db=tmp_path / "other.db")
    assert config.read_text().count("[mcp_servers.memdex]") == 1
    assert tomllib.loads(config.read_text())["mcp_servers"]["memdex"]["args"][1] == str(tmp_path / "other.db")
    code, out, _ = setup("codex", "--remove")
    assert code == 0 and "Removed memdex from" in out
    assert config.read_text() == CODEX_CONFIG


def test_codex_home_is_honoured(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEX_HOME", str(tmp_path / "codex-home"))
    assert setup("codex")[0] == 0
    assert "memdex" in tomllib.loads((tmp_path / "codex-home" / "config.toml").read_text())["mcp_servers"]
    assert not (home / ".codex").exists()


@pytest.mark.parametrize(
    "inline",
    ['mcp_servers.memdex = { command = "old" }\n', '[mcp_servers]\nmemdex = { command = "old" }\n'],
    ids=["dotted", "inline-table"],
)
def test_a_memdex_entry_memdex_does_not_edit_is_refused_and_the_file_left_alone(
    home: Path, inline: str
) -> None:
    config = home / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG.split("[mcp_servers.other]")[0] + inline)
    before = config.read_text()
    code, _, err = setup("codex")
    assert code == 1
    assert "in a form memdex does not edit" in err and str(config) in err
    assert config.read_text() == before and backups(config) == []


def test_gemini_merge_keeps_other_servers_and_settings(home: Path, tmp_path: Path) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    other = {"mcpServers": {"github": {"command": "gh-mcp", "args": []}}, "ui": {"theme": "Dracula"}}
    settings.write_text(json.dumps(other))
    db = tmp_path / "index.db"
    assert setup("gemini", db=db)[0] == 0
    data = json.loads(settings.read_text())
    assert data["ui"] == {"theme": "Dracula"}
    assert data["mcpServers"]["github"] == other["mcpServers"]["github"]
    assert data["mcpServers"]["memdex"] == {  # not trusted: that would run save_results unasked
        "command": memdex_command()[0],
        "args": ["--db", str(db), "mcp", "--save-tool"],
    }
    assert data["tools"] == {"allowed": [f"mcp_memdex_{tool}" for tool in TOOLS]}
    assert [json.loads(b.read_text()) for b in backups(settings)] == [other]
    assert setup("gemini", "--remove")[0] == 0
    assert json.loads(settings.read_text()) == other


def test_gemini_cli_home_is_honoured(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GEMINI_CLI_HOME", str(tmp_path / "g"))
    assert setup("gemini")[0] == 0
    assert (tmp_path / "g" / ".gemini" / "settings.json").exists()


def test_claude_code_registers_the_plugin_with_this_memdex_and_index(home: Path, tmp_path: Path) -> None:
    settings = home / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {
        "permissions": {"allow": ["Bash(git status)"], "deny": ["Read(./.env)"]},
        "enabledPlugins": {"other@market": True},
        "model": "opus",
    }
    settings.write_text(json.dumps(mine, indent=2))
    db = tmp_path / "index.db"
    code, out, _ = setup("claude-code", db=db)
    assert code == 0, out
    data = json.loads(settings.read_text())
    assert data["model"] == "opus"
    assert data["enabledPlugins"] == {"other@market": True, "memdex@memdex": True}
    assert data["extraKnownMarketplaces"]["memdex"] == {
        "source": {"source": "directory", "path": str(PLUGIN_DIR)}
    }
    assert (PLUGIN_DIR / ".claude-plugin" / "marketplace.json").exists()
    assert data["pluginConfigs"]["memdex@memdex"] == {
        "options": {"memdex": memdex_command()[0], "db": str(db)}
    }
    assert data["permissions"] == {"allow": ["Bash(git status)", *CLAUDE_TOOLS], "deny": ["Read(./.env)"]}
    assert setup("claude-code", "--remove")[0] == 0
    assert json.loads(settings.read_text()) == mine


def test_claude_config_dir_is_honoured(home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(tmp_path / "cc"))
    assert setup("claude-code")[0] == 0
    assert json.loads((tmp_path / "cc" / "settings.json").read_text())["enabledPlugins"] == {
        "memdex@memdex": True
    }


@pytest.mark.parametrize("agent", ["claude-code", "codex", "gemini"])
def test_print_shows_what_a_fresh_file_gets_and_writes_nothing(
    home: Path, tmp_path: Path, agent: str
) -> None:
    db = tmp_path / "index.db"
    code, printed, err = setup(agent, "--print", db=db)
    assert code == 0
    assert f"merge into {home}" in err
    assert not any(home.rglob("*.json")) and not any(home.rglob("*.toml"))
    assert str(db) in printed
    assert setup(agent, db=db)[0] == 0
    written = next(p for p in home.rglob("*") if p.suffix in (".json", ".toml"))
    assert written.read_text() == printed


def test_a_file_that_is_no_json_is_refused(home: Path) -> None:
    settings = home / ".gemini" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"mcpServers": {,}')
    code, _, err = setup("gemini")
    assert code == 1 and "is not JSON memdex can read" in err
    assert settings.read_text() == '{"mcpServers": {,}'


def test_a_symlinked_file_is_written_where_it_points(home: Path, tmp_path: Path) -> None:
    "Dotfiles kept in a repository and linked into ~ stay links."
    real = tmp_path / "dotfiles" / "config.toml"
    real.parent.mkdir()
    real.write_text(CODEX_CONFIG)
    (home / ".codex").mkdir()
    (home / ".codex" / "config.toml").symlink_to(real)
    assert setup("codex")[0] == 0
    assert (home / ".codex" / "config.toml").is_symlink()
    assert "[mcp_servers.memdex]" in real.read_text()


def test_remove_without_a_file_says_so(home: Path) -> None:
    code, out, _ = setup("codex", "--remove")
    assert code == 0 and "nothing to remove" in out
    assert not (home / ".codex").exists()


def test_print_and_remove_together_is_a_usage_error(home: Path) -> None:
    assert setup("codex", "--print", "--remove")[0] == 2


def test_what_setup_lets_an_agent_run_unasked_writes_no_file(home: Path, tmp_path: Path) -> None:
    "Every tool allowed without asking, in each agent's file, is one of the server's that cannot write."
    assert SERVER_ARGS == ["mcp", "--save-tool"]
    offered = tool_names(save_tool=True)
    readers = [t for t in offered if not writes_files(t, save_tool=True)]
    assert list(TOOLS) == readers and "save_results" in offered and writes_files("save_results")
    assert writes_files("search_knowledge_base")  # without --save-tool it takes output_file
    db = tmp_path / "index.db"
    for agent in ("claude-code", "codex", "gemini"):
        assert setup(agent, db=db)[0] == 0, agent
    claude = json.loads((home / ".claude" / "settings.json").read_text())
    unasked = {"claude-code": [t.rsplit("__", 1)[1] for t in claude["permissions"]["allow"]]}
    codex = tomllib.loads((home / ".codex" / "config.toml").read_text())["mcp_servers"]["memdex"]
    assert codex["default_tools_approval_mode"] == "prompt"
    unasked["codex"] = [t for t, c in codex["tools"].items() if c["approval_mode"] != "prompt"]
    gemini = json.loads((home / ".gemini" / "settings.json").read_text())
    assert "trust" not in gemini["mcpServers"]["memdex"]
    unasked["gemini"] = [t.removeprefix("mcp_memdex_") for t in gemini["tools"]["allowed"]]
    for agent, tools in unasked.items():
        assert tools == readers, agent
    for args in (codex["args"], gemini["mcpServers"]["memdex"]["args"]):
        assert args[-2:] == SERVER_ARGS
    plugin = json.loads((PLUGIN_DIR / ".mcp.json").read_text())["mcpServers"]["memdex"]
    assert plugin["args"][1:] == SERVER_ARGS
