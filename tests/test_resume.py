"""Back into an agent's session from a hit, and the agents' own folders found (issue 28):
`memdex show --resume` prints the command (never runs it), results carry it, `memdex kinds`
lists where each agent keeps its sessions and `memdex index --agents` indexes those found
under $HOME."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memdex.doors.cli import cli
from memdex.ingest.kinds.aider import local_stamp
from tests.conftest import shared
from tests.ingest.test_agents import lay_out_opencode

CLAUDE_SESSION = ("chats", "claude-code", "chiphuyen-sniffly", "-Users-chip-dev-ai-music")
CODEX_ROLLOUT = ("chats", "codex", "AcidicSoil-codex-session-view", "sessions")
GEMINI_SESSION = (
    "chats",
    "gemini",
    "mischa-thisness-M-Gemini",
    "Archives",
    "session-2025-11-21T20-38-8016034b.json",
)
COPILOT_EVENTS = (
    "chats",
    "copilot-cli",
    "qiaolei81-copilot-session-viewer",
    "__tests__",
    "fixtures",
    "sessions",
    "copilot-cli",
    "session-demo",
    "events.jsonl",
)
OPENCODE_EVENTS = ("chats", "opencode", "sudo-tee-opencode.nvim", "tests", "data", "api-error.json")
AIDER = ("chats", "aider", "AFI-Protocol-afi-core", ".aider.chat.history.md")


def run(db_path: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db_path), *args])


def agents_home(home: Path, data_home: Path) -> None:
    "Each agent's real files where the agent keeps them (OpenCode's under $XDG_DATA_HOME)."
    shutil.copytree(shared(*CLAUDE_SESSION), home / ".claude" / "projects" / "-Users-chip-dev-ai-music")
    shutil.copytree(shared(*CODEX_ROLLOUT), home / ".codex" / "sessions")
    chats = home / ".gemini" / "tmp" / "notes-app" / "chats"
    chats.mkdir(parents=True)
    shutil.copy(shared(*GEMINI_SESSION), chats)
    (chats.parent / ".project_root").write_text("/home/me/notes-app\n")
    copilot = home / ".copilot" / "session-state" / "030f200c-c26f-4ef0-9099-6d1156c83631"
    copilot.mkdir(parents=True)
    shutil.copy(shared(*COPILOT_EVENTS), copilot)
    lay_out_opencode(shared(*OPENCODE_EVENTS), data_home / "opencode" / "storage")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    "A $HOME of our own, with no agent's settings pointing elsewhere."
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
        monkeypatch.delenv(name, raising=False)
    return home


def test_index_agents_finds_their_folders_under_home(home: Path, tmp_path: Path, db_path: Path) -> None:
    data_home = tmp_path / "xdg"  # conftest's XDG_DATA_HOME
    nothing = run(db_path, "index", "--agents")
    assert nothing.exit_code == 1
    assert nothing.stderr.startswith(
        f"Error: No coding agent's sessions were found here; looked in {home}/.gemini/tmp, "
    )
    assert run(db_path, "index", "--agents", "--kind", "note").exit_code == 2
    agents_home(home, data_home)
    result = run(db_path, "index", "--agents", "--json")
    assert result.exit_code == 0, result.output
    assert result.stderr.splitlines() == [
        f"Found gemini-cli sessions in {home}/.gemini/tmp",
        f"Found copilot-cli sessions in {home}/.copilot/session-state",
        f"Found opencode sessions in {data_home}/opencode/storage",
        f"Found claude-code sessions in {home}/.claude/projects",
        f"Found codex sessions in {home}/.codex/sessions",
    ]
    report = json.loads(result.stdout)
    assert sorted(r["path"] for r in report["roots"]) == sorted(
        [
            f"{home}/.gemini/tmp",
            f"{home}/.copilot/session-state",
            f"{data_home}/opencode/storage",
            f"{home}/.claude/projects",
            f"{home}/.codex/sessions",
        ]
    )
    listed = run(db_path, "kinds").stdout
    assert "             default: ~/.claude/projects (found)" in listed.splitlines()
    assert "             default: ~/.copilot/history-session-state" in listed.splitlines()  # not here
    as_json = {k["name"]: k["locations"] for k in json.loads(run(db_path, "kinds", "--json").stdout)}
    assert as_json["opencode"] == [
        {
            "kind": "opencode",
            "location": "$XDG_DATA_HOME/opencode/storage",
            "path": f"{data_home}/opencode/storage",
            "exists": True,
        }
    ]
    assert as_json["note"] == [] and as_json["aider"] == []  # Aider's history is in each repository


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    "One index of every agent's sessions in its home, an Aider repository and a note beside it."
    base = tmp_path_factory.mktemp("resume")
    repo = base / "repo"
    repo.mkdir()
    shutil.copy(shared(*AIDER), repo)
    (repo / "notepad.md").write_text("# Notepad\n\nRun notepad as admin only when you must.\n")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HOME", str(base / "home"))
        patch.setenv("XDG_DATA_HOME", str(base / "xdg"))
        for name in ("CLAUDE_CONFIG_DIR", "CODEX_HOME"):
            patch.delenv(name, raising=False)
        agents_home(base / "home", base / "xdg")
        result = run(base / "index.db", "index", "-q", "--agents", str(repo))
    assert result.exit_code == 0, result.output
    return base / "index.db", repo


@pytest.mark.parametrize(
    ("ref", "command"),
    [
        (
            "ba79134d-b6e9-4867-af0c-6941038c9e4b",
            "cd /Users/chip/dev/ai-music && claude --resume ba79134d-b6e9-4867-af0c-6941038c9e4b",
        ),
        (
            "019a93b9-f380-7600-98ff-940e6b99603c",
            "cd /home/user/projects/temp/chatbot-ui && codex resume 019a93b9-f380-7600-98ff-940e6b99603c",
        ),
        (
            "8016034b-8665-42c9-bb72-6486cf8a8162",
            "cd /home/me/notes-app && gemini --resume 8016034b-8665-42c9-bb72-6486cf8a8162",
        ),
        (
            "030f200c-c26f-4ef0-9099-6d1156c83631",
            "cd /Users/testuser/workspace/demo-project && copilot --resume 030f200c-c26f-4ef0-9099-6d1156c83631",
        ),
        (
            "ses_60079963cffekYiAZT1g5So7dY",
            "cd /Users/cam/tmp/a && opencode --session ses_60079963cffekYiAZT1g5So7dY",
        ),
        ("aider", "cd {repo} && aider --restore-chat-history"),  # Aider resumes no session by id
    ],
)
def test_show_resume_prints_the_command_in_the_sessions_folder(
    sessions: tuple[Path, Path], ref: str, command: str
) -> None:
    db_path, repo = sessions
    if ref == "aider":
        ref, command = str(local_stamp("2025-07-15 14:53:34")), command.format(repo=repo)
    shown = run(db_path, "show", ref, "--resume")
    assert (shown.exit_code, shown.stdout) == (0, command + "\n")
    data = json.loads(run(db_path, "show", ref, "--resume", "--json").stdout)
    assert data["command"] == command and data["cwd"] == command[3:].split(" && ")[0]


def test_results_carry_the_command_and_other_documents_have_none(sessions: tuple[Path, Path]) -> None:
    db_path, repo = sessions
    found = json.loads(run(db_path, "search", "notepad admin", "--json").stdout)["results"]
    resume = {r["kind"]: r["resume"] for r in found}
    assert resume["note"] is None
    assert resume["gemini-cli"] == {
        "argv": ["gemini", "--resume", "8016034b-8665-42c9-bb72-6486cf8a8162"],
        "cwd": "/home/me/notes-app",
        "command": "cd /home/me/notes-app && gemini --resume 8016034b-8665-42c9-bb72-6486cf8a8162",
    }
    text = run(db_path, "search", "notepad admin").stdout
    assert "    resume: cd /home/me/notes-app && gemini --resume 8016034b-8665-42c9-bb72-6486cf8a8162" in text
    note = run(db_path, "show", str(repo / "notepad.md"), "--resume")
    assert note.exit_code == 1
    assert "note documents are no agent sessions" in note.stderr
