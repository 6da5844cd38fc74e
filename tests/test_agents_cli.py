"""The real coding agents reach memdex: Claude Code (through the plugin), Codex and Gemini CLI
(through the MCP entries `memdex setup` writes), each pointed at a local server that speaks its
model API (tests/agent_apis.py) and scripts a model that calls memdex's search tool.

The pinned CLIs are installed with npm into a cache folder once (``$MEMDEX_AGENTS_CACHE``,
else ``~/.cache/memdex-tests/agents-<versions>``; about 0.9 GB, 30-50 s the first time), so
a clean CI run installs them inside the test run. Without npm or the registry, the tests
skip and say why. The three agents run at once, in one module fixture: each in a home of its
own, in one project folder, on one index. The sessions they write are then indexed with
memdex's own kinds and found.
"""

from __future__ import annotations

import fcntl
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from memdex.agents import PLUGIN_DIR
from memdex.agents.context import DEFAULT_TOKENS, estimate
from tests.agent_apis import ANSWER, KEY, QUERY, AnthropicServer, GeminiServer, ModelServer, ResponsesServer

pytestmark = pytest.mark.slow

VERSIONS = {
    "@anthropic-ai/claude-code": "2.1.332",
    "@openai/codex": "0.171.0",
    "@google/gemini-cli": "0.61.0",
}
CACHE = Path(
    os.environ.get("MEMDEX_AGENTS_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    / "memdex-tests"
    / ("agents-" + "-".join(v for v in VERSIONS.values()))
)
MEMDEX = str(Path(sys.executable).parent / "memdex")
PROMPT = "What was our zebra migration plan?"
NOTE_TITLE = "Zebra migration plan"
PRIOR_TITLE = "Shard the zebra herd tables"
CLI_SECONDS = 180


@dataclass
class Clis:
    claude: Path
    codex: Path
    gemini: Path


def _npm_install() -> Clis:
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        pytest.skip("npm and node are needed to install the agents' CLIs (apt-get install nodejs npm)")
    arch = {"x86_64": "x64", "aarch64": "arm64", "arm64": "arm64"}.get(platform.machine())
    if platform.system() != "Linux" or arch is None:
        pytest.skip(
            f"the pinned CLIs are tested on Linux x64/arm64, not {platform.system()} {platform.machine()}"
        )
    CACHE.mkdir(parents=True, exist_ok=True)
    with open(CACHE / ".lock", "w") as lock:  # two test runs on one machine install once
        fcntl.flock(lock, fcntl.LOCK_EX)
        stamp = CACHE / "installed.json"
        if not stamp.exists() or json.loads(stamp.read_text()) != VERSIONS:
            # --ignore-scripts: Claude Code's postinstall only copies its platform binary over a
            # stub (400 MB more); the binary is run from its own package below.
            out = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--ignore-scripts", "--prefix", str(CACHE)]
                + [f"{name}@{version}" for name, version in VERSIONS.items()],
                capture_output=True,
                text=True,
                timeout=600,
            )
            if out.returncode != 0:
                pytest.skip(
                    f"npm install of the agents' CLIs failed (no registry here?): {out.stderr[-600:]}"
                )
            stamp.write_text(json.dumps(VERSIONS))
    modules = CACHE / "node_modules"
    return Clis(
        claude=modules / "@anthropic-ai" / f"claude-code-linux-{arch}" / "claude",
        codex=modules / ".bin" / "codex",
        gemini=modules / ".bin" / "gemini",
    )


@pytest.fixture(scope="session")
def clis() -> Clis:
    return _npm_install()


def clean_env(home: Path, **extra: str) -> dict[str, str]:
    "The test's environment without any agent's or memdex's own settings, and a home of its own."
    drop = ("ANTHROPIC", "CLAUDE", "OPENAI", "CODEX", "GEMINI", "GOOGLE", "MEMDEX", "XDG_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env.update(HOME=str(home), DISABLE_AUTOUPDATER="1", NO_COLOR="1", **extra)
    return env


def claude_session_line(n: int, role: str, text: str, cwd: Path) -> str:
    return json.dumps(
        {
            "parentUuid": f"prior-{n - 1}" if n else None,
            "isSidechain": False,
            "type": role,
            "sessionId": "prior",
            "cwd": str(cwd),
            "gitBranch": "main",
            "version": "2.1.0",
            "uuid": f"prior-{n}",
            "timestamp": f"2026-11-20T10:00:0{n}Z",
            "message": {
                "role": role,
                "content": text if role == "user" else [{"type": "text", "text": text}],
            },
        }
    )


@dataclass
class Run:
    "One agent's run: its exit, output, and what its model server saw."

    name: str
    home: Path
    api: ModelServer
    returncode: int | None = None
    stdout: str = ""
    stderr: str = ""
    seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass
class World:
    project: Path
    db: Path
    runs: dict[str, Run]


def memdex(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([MEMDEX, *args], capture_output=True, text=True, env=env, timeout=120)


@pytest.fixture(scope="module")
def world(clis: Clis, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    base = tmp_path_factory.mktemp("agents")
    project = base / "zebra-app"
    project.mkdir()
    notes = base / "notes"
    notes.mkdir()
    (notes / "zebra.md").write_text(
        f"# {NOTE_TITLE}\n\nWe decided to move the zebra tables in two steps: copy, then switch reads.\n"
    )
    homes = {name: base / f"home-{name}" for name in ("claude", "codex", "gemini")}
    for home in homes.values():
        home.mkdir()
    # a session Claude Code had in this project before: what the session-start hook tells about
    prior = homes["claude"] / ".claude" / "projects" / ("-" + str(project).strip("/").replace("/", "-"))
    prior.mkdir(parents=True)
    said = [PRIOR_TITLE, "Done. We decided to shard by herd. TODO: backfill the stripes column."]
    lines = [
        claude_session_line(n, ("user", "assistant")[n % 2], text, project) for n, text in enumerate(said)
    ]
    (prior / "prior.jsonl").write_text("\n".join(lines) + "\n")
    db = base / "index.db"
    assert (
        memdex("--db", str(db), "index", str(notes), str(homes["claude"] / ".claude" / "projects")).returncode
        == 0
    )

    # what each agent needs besides memdex: a model provider pointing here, an auth method
    codex_home = homes["codex"] / ".codex"
    codex_home.mkdir()
    (homes["gemini"] / ".gemini").mkdir()
    # and nothing sent anywhere else: no usage statistics, no update checks
    (homes["gemini"] / ".gemini" / "settings.json").write_text(
        json.dumps(
            {
                "security": {"auth": {"selectedType": "gemini-api-key"}},
                "privacy": {"usageStatisticsEnabled": False},
                "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
            }
        )
    )
    apis = {"claude": AnthropicServer(QUERY), "codex": ResponsesServer(QUERY), "gemini": GeminiServer(QUERY)}
    with apis["claude"], apis["codex"], apis["gemini"]:
        (codex_home / "config.toml").write_text(
            '# the local model (tests/agent_apis.py)\nmodel = "gpt-5.5"\nmodel_provider = "memdex_test"\n'
            "check_for_update_on_startup = false\n\n[analytics]\nenabled = false\n\n"
            "[model_providers.memdex_test]\n"
            f'name = "memdex test"\nbase_url = "{apis["codex"].url}/v1"\nwire_api = "responses"\n'
            'env_key = "MEMDEX_TEST_KEY"\n'
        )
        envs = {
            "claude": clean_env(
                homes["claude"],
                ANTHROPIC_BASE_URL=apis["claude"].url,
                ANTHROPIC_API_KEY=KEY,
                DISABLE_TELEMETRY="1",
                CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
            ),
            "codex": clean_env(homes["codex"], CODEX_HOME=str(codex_home), MEMDEX_TEST_KEY=KEY),
            "gemini": clean_env(
                homes["gemini"],
                GEMINI_CLI_HOME=str(homes["gemini"]),
                GOOGLE_GEMINI_BASE_URL=apis["gemini"].url,
                GEMINI_API_KEY=KEY,
            ),
        }
        for name, agent in (("claude", "claude-code"), ("codex", "codex"), ("gemini", "gemini")):
            done = memdex("--db", str(db), "setup", agent, env=envs[name])
            assert done.returncode == 0, done.stderr
        commands = {
            "claude": [str(clis.claude), "-p", PROMPT, "--output-format", "stream-json", "--verbose"],
            "codex": [str(clis.codex), "exec", "--skip-git-repo-check", "--json", PROMPT],
            "gemini": [str(clis.gemini), "-p", PROMPT, "--output-format", "json", "--skip-trust"],
        }
        runs = {name: Run(name, homes[name], apis[name]) for name in commands}
        started = time.monotonic()
        procs = {
            name: subprocess.Popen(
                command,
                cwd=project,
                env=envs[name],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for name, command in commands.items()
        }
        for name, proc in procs.items():
            try:
                out, err = proc.communicate(timeout=max(1.0, CLI_SECONDS - (time.monotonic() - started)))
            except subprocess.TimeoutExpired:
                proc.kill()
                out, err = proc.communicate()
            runs[name].returncode, runs[name].stdout, runs[name].stderr = proc.returncode, out, err
            runs[name].seconds = time.monotonic() - started
    # the sessions the agents wrote, read by memdex's own kinds
    logs = [
        homes["claude"] / ".claude" / "projects",
        codex_home / "sessions",
        homes["gemini"] / ".gemini" / "tmp",
    ]
    indexed = memdex("--db", str(db), "index", *map(str, logs))
    for run in runs.values():
        run.extra["index"] = indexed
    yield World(project, db, runs)


def check_memdex_answered(run: Run, tool_suffix: str) -> None:
    "memdex's MCP server got the call and its result reached the model."
    assert run.returncode == 0, (run.stdout[-2000:], run.stderr[-2000:])
    offered = run.api.calls()
    assert offered, f"{run.name} never offered memdex's tool: {[r['path'] for r in run.api.requests]}"
    assert any(name.endswith(tool_suffix) for r in offered for name in run.api.tool_names(r["body"]))
    results = run.api.results_seen()
    assert results, f"{run.name} sent no result of memdex's tool back to the model"
    # what only memdex's server writes: its search JSON for the query, with the note it found
    assert any(f'"query": "{QUERY}"' in r or f'"query":"{QUERY}"' in r for r in results), results[-1][:500]
    assert any(NOTE_TITLE in r for r in results), results[-1][:500]


def test_claude_code_calls_memdex_through_the_plugin(world: World) -> None:
    run = world.runs["claude"]
    check_memdex_answered(run, "mcp__plugin_memdex_memdex__search_knowledge_base")
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    init = next(e for e in events if e.get("subtype") == "init")
    assert any(p["name"] == "memdex" and p["path"] == str(PLUGIN_DIR) for p in init["plugins"])
    assert "memdex:memdex-search" in init["skills"] and "memdex:memory-searcher" in init["agents"]
    assert {"memdex:search", "memdex:ask"} <= set(init["slash_commands"])
    result = next(e for e in events if e.get("type") == "result")
    assert result["result"].startswith(ANSWER) and NOTE_TITLE in result["result"]


def test_claude_codes_session_starts_with_the_hooks_context(world: World) -> None:
    run = world.runs["claude"]
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    hook = next(
        e for e in events if e.get("subtype") == "hook_response" and e["hook_event"] == "SessionStart"
    )
    assert hook["exit_code"] == 0
    context = json.loads(hook["stdout"])["hookSpecificOutput"]["additionalContext"]
    assert PRIOR_TITLE in context and "We decided to shard by herd." in context
    assert "TODO: backfill the stripes column." in context
    assert estimate(context) <= DEFAULT_TOKENS  # the budget the hook declares (docs/agents.md)
    first = json.dumps(run.api.requests[0]["body"])
    assert "SessionStart hook additional context" in first and PRIOR_TITLE in first


def test_codex_calls_memdex_through_its_mcp_entry(world: World) -> None:
    check_memdex_answered(world.runs["codex"], "search_knowledge_base")
    events = [json.loads(line) for line in world.runs["codex"].stdout.splitlines() if line.startswith("{")]
    calls = [
        e["item"]
        for e in events
        if e.get("type") == "item.completed" and e["item"]["type"] == "mcp_tool_call"
    ]
    assert [(c["server"], c["tool"], c["status"]) for c in calls] == [
        ("memdex", "search_knowledge_base", "completed")
    ]


def test_gemini_cli_calls_memdex_through_its_mcp_entry(world: World) -> None:
    run = world.runs["gemini"]
    check_memdex_answered(run, "mcp_memdex_search_knowledge_base")
    offered = {name for r in run.api.calls() for name in run.api.tool_names(r["body"])}
    # setup's tools.allowed lets the readers run; save_results, not trusted, has nobody to ask
    # in a run with -p, so Gemini CLI does not offer it
    assert {"mcp_memdex_get_document", "mcp_memdex_index_status"} <= offered
    assert "mcp_memdex_save_results" not in offered
    out = json.loads(run.stdout)
    assert out["response"].startswith(ANSWER)
    assert out["stats"]["tools"]["totalSuccess"] >= 1


def test_the_sessions_the_agents_wrote_are_indexed_and_found(world: World) -> None:
    "Each agent's own session log, in the format of its pinned version, read by memdex's kind for it."
    indexed = world.runs["claude"].extra["index"]
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr
    for name, platform_name in (("claude", "claude-code"), ("codex", "codex"), ("gemini", "gemini-cli")):
        found = memdex("--db", str(world.db), "search", PROMPT, "--platform", platform_name, "--json")
        results = json.loads(found.stdout)["results"]
        assert results, f"no {platform_name} session found: {indexed.stdout}"
        assert results[0]["platform"] == platform_name
        assert results[0]["title"] == PROMPT  # Gemini CLI's own <session_context> turn is no title
        assert Path(results[0]["path"]).is_relative_to(world.runs[name].home)


def test_the_context_lists_every_agents_session_of_the_project(world: World) -> None:
    out = memdex("--db", str(world.db), "context", str(world.project), "--json", "--max-tokens", "1000")
    found = json.loads(out.stdout)
    assert {s["platform"] for s in found["sessions"]} >= {"claude-code", "codex", "gemini-cli"}


def test_the_plugin_installs_into_claude_code_from_its_folder(clis: Clis, tmp_path: Path) -> None:
    env = clean_env(tmp_path)
    claude = str(clis.claude)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([claude, *args], env=env, capture_output=True, text=True, timeout=120)

    validated = run("plugin", "validate", "--strict", str(PLUGIN_DIR))
    assert validated.returncode == 0, validated.stdout[-2000:]
    assert run("plugin", "marketplace", "add", str(PLUGIN_DIR)).returncode == 0
    installed = run("plugin", "install", "memdex@memdex")
    assert installed.returncode == 0, installed.stdout + installed.stderr
    listed = json.loads(run("plugin", "list", "--json").stdout)
    mine = next(p for p in listed if p["id"] == "memdex@memdex")
    assert mine["enabled"] and mine["readFromFolder"] == str(PLUGIN_DIR)
    assert mine["mcpServers"]["memdex"]["args"] == [
        "${CLAUDE_PLUGIN_ROOT}/scripts/memdex.sh",
        "mcp",
        "--save-tool",
    ]


def test_codex_reads_what_setup_prints(clis: Clis, tmp_path: Path) -> None:
    env = clean_env(tmp_path, CODEX_HOME=str(tmp_path / "codex"))
    printed = memdex("--db", str(tmp_path / "i.db"), "setup", "codex", "--print", env=env)
    (tmp_path / "codex").mkdir()
    (tmp_path / "codex" / "config.toml").write_text(printed.stdout)
    listed = subprocess.run(
        [str(clis.codex), "mcp", "list", "--json"], env=env, capture_output=True, text=True, timeout=60
    )
    assert listed.returncode == 0, listed.stderr
    (server,) = json.loads(listed.stdout)
    assert server["name"] == "memdex" and server["enabled"]
    assert server["transport"]["command"] == MEMDEX
    assert server["transport"]["args"] == ["--db", str(tmp_path / "i.db"), "mcp", "--save-tool"]
