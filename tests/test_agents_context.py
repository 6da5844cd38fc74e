"""memdex context: what the index holds about a project folder, within the token budget it
declares; and the Claude Code plugin's script that runs it as the session-start hook."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdex.agents import PLUGIN_DIR
from memdex.agents.context import estimate, hook_output, project_context
from memdex.doors.cli import cli
from memdex.ingest.pipeline import index_paths
from memdex.store import db

SCRIPT = PLUGIN_DIR / "scripts" / "memdex.sh"
MEMDEX = str(Path(sys.executable).parent / "memdex")  # this memdex, not another on the PATH


def claude_line(n: int, role: str, text: str, cwd: str, session: str, day: int = 20) -> str:
    return json.dumps(
        {
            "parentUuid": f"{session}-{n - 1}" if n else None,
            "isSidechain": False,
            "type": role,
            "sessionId": session,
            "cwd": cwd,
            "gitBranch": "main",
            "version": "2.1.0",
            "uuid": f"{session}-{n}",
            "timestamp": f"2026-11-{day:02d}T10:00:{n % 60:02d}Z",
            "message": {
                "role": role,
                "content": text if role == "user" else [{"type": "text", "text": text}],
            },
        }
    )


def write_session(folder: Path, project: Path, session: str, said: list[str], day: int) -> None:
    "A Claude Code session of ``project``, as Claude Code keeps it: projects/<munged cwd>/<id>.jsonl."
    where = folder / ("-" + str(project).strip("/").replace("/", "-"))
    where.mkdir(parents=True, exist_ok=True)
    lines = [
        claude_line(n, "user" if n % 2 == 0 else "assistant", text, str(project), session, day)
        for n, text in enumerate(said)
    ]
    (where / f"{session}.jsonl").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("context")


@pytest.fixture(scope="module")
def project(base: Path) -> Path:
    folder = base / "work" / "zebra-app"
    (folder / "docs").mkdir(parents=True)
    (folder / "docs" / "adr-7.md").write_text("# ADR 7: shard the zebra tables\n\nSharding by herd.\n")
    return folder


@pytest.fixture(scope="module")
def indexed(base: Path, project: Path) -> Path:
    "An index of two sessions in the project, one elsewhere, and the project's docs. Read only."
    sessions = base / "claude" / "projects"
    write_session(
        sessions,
        project,
        "s-old",
        ["Set up the zebra app", "Done. We decided to keep SQLite for the herd index."],
        21,
    )
    write_session(
        sessions,
        project,
        "s-new",
        [
            "Migrate the zebra tables to the new schema",
            "I copied the tables. We'll go with a two-step switch of the reads. TODO: backfill the stripes column.",
            "What is left?",
            "The next step is the read switch; the stripes backfill is still failing on row 12.",
        ],
        25,
    )
    write_session(
        sessions, base / "elsewhere", "s-other", ["Unrelated lion work", "We decided on lions."], 26
    )
    path = base / "index.db"
    conn = db.connect(path)
    index_paths(conn, [sessions, project / "docs"])
    conn.close()
    return path


def context_of(path: Path, project: Path, budget: int = 300) -> dict:
    conn = db.connect(path, create=False, readonly=True)
    try:
        return project_context(conn, project, budget).to_dict()
    finally:
        conn.close()


def test_the_projects_sessions_decisions_threads_and_notes(indexed: Path, project: Path) -> None:
    found = context_of(indexed, project)
    assert [s["key"] for s in found["sessions"]] == ["s-new", "s-old"]  # newest first, not s-other
    assert [d["text"] for d in found["decisions"]] == [
        "We'll go with a two-step switch of the reads.",
        "We decided to keep SQLite for the herd index.",
    ]
    threads = [t["text"] for t in found["open_threads"]]
    assert "The next step is the read switch; the stripes backfill is still failing on row 12." in threads
    assert "TODO: backfill the stripes column." in threads
    assert found["last_prompt"]["text"] == "What is left?"
    assert [f["title"] for f in found["files"]] == ["ADR 7: shard the zebra tables"]
    text = found["text"]
    assert text.startswith(
        f"memdex holds 2 agent sessions and 1 memories or notes about this folder ({project})"
    )
    assert 'project="zebra-app"' in text
    assert "Migrate the zebra tables to the new schema" in text and "lion" not in text
    assert found["est_tokens"] == estimate(text) <= 300


@pytest.mark.parametrize("budget", [40, 60, 90, 130, 200, 300, 1000])
def test_the_text_never_passes_its_budget(indexed: Path, project: Path, budget: int) -> None:
    found = context_of(indexed, project, budget)
    assert estimate(found["text"]) <= budget
    if found["text"]:
        assert found["text"].startswith("memdex holds")  # the header goes first, or nothing does
    wide = context_of(indexed, project, 1000)["text"]
    assert len(found["text"]) <= len(wide)


def test_a_folder_the_index_knows_nothing_about_gets_nothing(indexed: Path, tmp_path: Path) -> None:
    assert context_of(indexed, tmp_path / "nowhere")["text"] == ""
    assert hook_output("") == ""


def test_a_subfolder_of_a_project_is_not_the_project_but_the_project_holds_its_subfolders(
    indexed: Path, project: Path
) -> None:
    assert [f["title"] for f in context_of(indexed, project / "docs")["files"]] == [
        "ADR 7: shard the zebra tables"
    ]
    assert context_of(indexed, project / "docs")["sessions"] == []
    assert len(context_of(indexed, project.parent)["sessions"]) == 2


def test_the_hook_reads_claude_codes_json_and_prints_its_hook_output(indexed: Path, project: Path) -> None:
    stdin = json.dumps(
        {"session_id": "x", "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
    )
    result = CliRunner().invoke(cli, ["--db", str(indexed), "context", "--hook"], input=stdin)
    assert result.exit_code == 0
    out = json.loads(result.stdout)
    context = out["hookSpecificOutput"]["additionalContext"]
    assert out["hookSpecificOutput"]["hookEventName"] == "SessionStart"
    assert "Migrate the zebra tables" in context and estimate(context) <= 300


def test_the_hook_is_silent_without_an_index(tmp_path: Path, project: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(tmp_path / "none.db"), "context", "--hook"], input="{}")
    assert (result.exit_code, result.output) == (0, "")
    assert not (tmp_path / "none.db").exists()


def test_context_without_hook_says_when_nothing_is_known(
    indexed: Path, project: Path, tmp_path: Path
) -> None:
    result = CliRunner().invoke(cli, ["--db", str(indexed), "context", str(tmp_path / "nowhere")])
    assert result.exit_code == 0 and result.stdout == ""
    assert "The index holds nothing about" in result.stderr
    result = CliRunner().invoke(cli, ["--db", str(indexed), "context", str(project), "--json"])
    assert json.loads(result.stdout)["sessions"][0]["key"] == "s-new"


# -- the plugin's script: how Claude Code runs the hook and the MCP server ----------------------
def run_script(*args: str, env: dict[str, str], stdin: str = "") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["sh", str(SCRIPT), *args], input=stdin, env=env, capture_output=True, text=True, timeout=60
    )


def base_env(tmp_path: Path) -> dict[str, str]:
    return {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "XDG_DATA_HOME": str(tmp_path / "xdg")}


@pytest.mark.slow
def test_the_script_runs_the_hook_with_the_plugins_options(
    indexed: Path, project: Path, tmp_path: Path
) -> None:
    "memdex setup claude-code writes the options; Claude Code hands them over as CLAUDE_PLUGIN_OPTION_*."
    space = tmp_path / "an index with spaces.db"
    shutil.copy(indexed, space)
    env = {**base_env(tmp_path), "CLAUDE_PLUGIN_OPTION_MEMDEX": MEMDEX, "CLAUDE_PLUGIN_OPTION_DB": str(space)}
    out = run_script("context", "--hook", env=env, stdin=json.dumps({"cwd": str(project)}))
    assert out.returncode == 0, out.stderr
    assert "Migrate the zebra tables" in json.loads(out.stdout)["hookSpecificOutput"]["additionalContext"]


def test_the_hook_is_silent_without_memdex(tmp_path: Path, project: Path) -> None:
    env = {**base_env(tmp_path), "CLAUDE_PLUGIN_OPTION_MEMDEX": str(tmp_path / "no-memdex")}
    out = run_script("context", "--hook", env=env, stdin=json.dumps({"cwd": str(project)}))
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")
    out = run_script("context", "--hook", env=base_env(tmp_path), stdin="{}")  # none on the PATH either
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_the_mcp_server_without_memdex_says_what_to_do(tmp_path: Path) -> None:
    out = run_script("mcp", env=base_env(tmp_path))
    assert out.returncode == 127
    assert "pip install memdex, then run memdex setup claude-code" in out.stderr


@pytest.mark.slow
def test_the_hook_is_silent_when_the_index_is_missing(tmp_path: Path, project: Path) -> None:
    env = {
        **base_env(tmp_path),
        "CLAUDE_PLUGIN_OPTION_MEMDEX": MEMDEX,
        "CLAUDE_PLUGIN_OPTION_DB": str(tmp_path / "x.db"),
    }
    out = run_script("context", "--hook", env=env, stdin=json.dumps({"cwd": str(project)}))
    assert (out.returncode, out.stdout, out.stderr) == (0, "", "")


def test_decisions_said_by_tools_are_not_decisions(tmp_path: Path, project: Path) -> None:
    "A build log that says 'decided' is no decision: only what the person and the agent said counts."
    sessions = tmp_path / "projects"
    where = sessions / "-x"
    where.mkdir(parents=True)
    lines = [
        claude_line(0, "user", "Run the build", str(project), "s-t"),
        json.dumps(
            {
                "parentUuid": "s-t-0",
                "type": "assistant",
                "sessionId": "s-t",
                "cwd": str(project),
                "uuid": "s-t-1",
                "timestamp": "2026-11-20T10:00:01Z",
                "message": {
                    "role": "assistant",
                    "content": [
                        {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "make"}}
                    ],
                },
            }
        ),
        json.dumps(
            {
                "parentUuid": "s-t-1",
                "type": "user",
                "sessionId": "s-t",
                "cwd": str(project),
                "uuid": "s-t-2",
                "timestamp": "2026-11-20T10:00:02Z",
                "message": {
                    "role": "user",
                    "content": [
                        {
                            "type": "tool_result",
                            "tool_use_id": "t1",
                            "content": "linker decided to drop symbols; TODO in foo.c",
                        }
                    ],
                },
            }
        ),
    ]
    (where / "s-t.jsonl").write_text("\n".join(lines) + "\n")
    path = tmp_path / "t.db"
    conn = db.connect(path)
    index_paths(conn, [sessions])
    conn.close()
    found = context_of(path, project)
    assert [s["key"] for s in found["sessions"]] == ["s-t"]
    assert found["decisions"] == [] and found["open_threads"] == []


def test_open_threads_are_what_a_person_would_call_open(tmp_path: Path) -> None:
    "Previously: 'last asked: /exit', '**Next Steps**', a line of code and /todo-app/ were threads."
    project = tmp_path / "work" / "kiwi"
    sessions = tmp_path / "claude" / "projects"
    said = [
        "<ide_opened_file>The user opened the file /work/kiwi/app.ts in the IDE.</ide_opened_file>"
        "Why does the importer stop halfway?",
        "The importer throws on row 12.\n\n```ts\n// TODO: handle empty rows\nthrow new Error('x');\n```\n"
        "  throw new Error('importer not yet implemented');\n"
        "- `/todo-app/types/` - Complete type definitions (actions.ts, filters.ts, etc.)\n\n"
        "## 6. **Next Steps**\n\n- Retry the import with the empty rows skipped.\n"
        "- Then check the totals.\n\n* Still need to fix the flaky login test on CI.",
        "/exit",
    ]
    write_session(sessions, project, "s-kiwi", said, 22)
    # the same session copied under a second root: listed once
    shutil.copytree(sessions, tmp_path / "backup")
    path = tmp_path / "index.db"
    conn = db.connect(path)
    index_paths(conn, [sessions, tmp_path / "backup"])
    conn.close()
    found = context_of(path, project, 1000)
    assert [s["key"] for s in found["sessions"]] == ["s-kiwi"]
    assert found["last_prompt"]["text"] == "Why does the importer stop halfway?"
    assert sorted(t["text"] for t in found["open_threads"]) == [
        "Retry the import with the empty rows skipped.",
        "Still need to fix the flaky login test on CI.",  # a `* ` bullet is prose, not code
    ]
    for noise in ("**", "/exit", "ide_opened_file", "todo-app", "not yet implemented"):
        assert noise not in found["text"], noise


def test_a_real_aider_history_gives_threads_not_headings_commands_or_code(tmp_path: Path) -> None:
    "The AFI-Protocol history in ../shared: it ends with /exit, '## 7. **Next Steps**' and stubs' code."
    from .conftest import shared

    folder = tmp_path / "afi-core"
    folder.mkdir()
    history = shared("chats", "aider", "AFI-Protocol-afi-core", ".aider.chat.history.md")
    (folder / ".aider.chat.history.md").write_bytes(history.read_bytes())
    path = tmp_path / "index.db"
    conn = db.connect(path)
    index_paths(conn, [folder])
    conn.close()
    found = context_of(path, folder, 1000)
    assert found["sessions"], found
    asked = found["last_prompt"]["text"]
    assert not asked.startswith("/") and asked.startswith("Please scan all files under dist/")
    threads = [t["text"] for t in found["open_threads"]]
    assert threads and "Add or implement the above DAG scaffolding." in threads
    for text in threads:
        assert "**" not in text and not text.startswith("#") and "throw new Error" not in text, text
