#!/usr/bin/env python3
"""What the Claude Code plugin's session-start hook costs: time and tokens.

``hook`` builds an index of real corpora (the Serena memories and every agent's sessions in
../shared/data/chats) plus generated Claude Code sessions of one project folder, then runs
the hook exactly as Claude Code does -- ``sh scripts/memdex.sh context --hook`` in the
plugin, Claude Code's JSON on stdin, the plugin's options in the environment -- beside
``python -c pass`` (the floor of any Python program), alternating, and reports medians of
wall and CPU time and the tokens the context adds against the budget it declares. With
``--serve`` it measures again while `memdex serve` runs on the index.

Examples:

    python scripts/bench_agents.py hook
    python scripts/bench_agents.py hook --runs 21 --sessions 500 --serve
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import bench  # noqa: E402  (scripts/: the benchmarks' helpers)

from memdex.agents import PLUGIN_DIR  # noqa: E402
from memdex.agents.context import DEFAULT_TOKENS, estimate  # noqa: E402

SHARED = HERE.parent.parent / "shared" / "data"
MEMDEX = str(Path(sys.executable).parent / "memdex")


def session_lines(n: int, project: Path) -> str:
    "A generated Claude Code session of ``project``: six exchanges, one decision, one open thread."
    lines = []
    for i in range(12):
        role = "user" if i % 2 == 0 else "assistant"
        text = (
            f"Session {n} step {i}: look at the parser for case {n * 7 + i}"
            if role == "user"
            else f"Done with case {n * 7 + i}. We decided to keep the cache for run {n}. "
            f"TODO: measure run {n}."
        )
        lines.append(
            json.dumps(
                {
                    "parentUuid": f"{n}-{i - 1}" if i else None,
                    "type": role,
                    "sessionId": f"gen-{n}",
                    "cwd": str(project),
                    "gitBranch": "main",
                    "version": "2.1.0",
                    "uuid": f"{n}-{i}",
                    "timestamp": f"2026-{1 + n % 12:02d}-{1 + n % 28:02d}T10:{i:02d}:00Z",
                    "message": {
                        "role": role,
                        "content": text if role == "user" else [{"type": "text", "text": text}],
                    },
                }
            )
        )
    return "\n".join(lines) + "\n"


def run_children(args: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, float, bytes]:
    """Seconds from start to exit, CPU seconds (user + system: another job on the machine
    inflates it less than wall time), and what the command printed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(args, input=stdin, capture_output=True, env=env)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode:
        raise SystemExit(f"{' '.join(args)} failed ({done.returncode}): {done.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seconds, cpu, done.stdout


def summary(samples: list[tuple[float, float, bytes]]) -> dict[str, float]:
    wall = sorted(s[0] for s in samples)
    return {
        "median_ms": round(statistics.median(wall) * 1000, 1),
        "p90_ms": round(wall[int(0.9 * (len(wall) - 1))] * 1000, 1),
        "max_ms": round(wall[-1] * 1000, 1),
        "cpu_median_ms": round(statistics.median(s[1] for s in samples) * 1000, 1),
        "runs": len(samples),
    }


def measure(project: Path, db: Path, runs: int) -> dict[str, object]:
    env = {
        **os.environ,
        "CLAUDE_PLUGIN_ROOT": str(PLUGIN_DIR),
        "CLAUDE_PLUGIN_OPTION_MEMDEX": MEMDEX,
        "CLAUDE_PLUGIN_OPTION_DB": str(db),
    }
    stdin = json.dumps(
        {"session_id": "bench", "cwd": str(project), "hook_event_name": "SessionStart", "source": "startup"}
    ).encode()
    hook_cmd = ["sh", str(PLUGIN_DIR / "scripts" / "memdex.sh"), "context", "--hook"]
    floor_cmd = [sys.executable, "-c", "pass"]
    hook, floor = [], []
    run_children(hook_cmd, stdin, env)  # the page cache warm, as for a session started again
    for _ in range(runs):
        hook.append(run_children(hook_cmd, stdin, env))
        floor.append(run_children(floor_cmd, b"", env))
    context = json.loads(hook[-1][2])["hookSpecificOutput"]["additionalContext"]
    return {
        "hook": summary(hook),
        "python_c_pass": summary(floor),
        "context_tokens": estimate(context),
        "budget_tokens": DEFAULT_TOKENS,
        "context": context,
    }


@click.group()
def cli() -> None:
    "Benchmarks of memdex inside coding agents."
    bench.words_only()


@cli.command()
@click.option("--runs", default=21, show_default=True, help="Runs of the hook and of the floor, alternating.")
@click.option("--sessions", default=300, show_default=True, help="Generated sessions of the project folder.")
@click.option("--serve", "with_serve", is_flag=True, help="Measure again with memdex serve running.")
def hook(runs: int, sessions: int, with_serve: bool) -> None:
    """The session-start hook, start to exit, on an index of real corpora and a busy project.

    Example:

        python scripts/bench_agents.py hook --runs 21
    """
    work = Path(tempfile.mkdtemp(prefix="memdex-bench-agents-"))
    try:
        project = work / "work" / "busy-project"
        logs = work / "claude" / "projects" / "-work-busy-project"
        logs.mkdir(parents=True)
        for n in range(sessions):
            (logs / f"gen-{n}.jsonl").write_text(session_lines(n, project))
        db = work / "index.db"
        roots = [work / "claude", SHARED / "serena-memories", SHARED / "chats"]
        subprocess.run([MEMDEX, "--db", str(db), "index", "-q", *map(str, roots)], check=False)
        docs = subprocess.run([MEMDEX, "--db", str(db), "status", "--json"], capture_output=True, text=True)
        out: dict[str, object] = {
            "documents": json.loads(docs.stdout)["counts"]["documents"],
            "project_sessions": sessions,
            "without_serve": measure(project, db, runs),
        }
        if with_serve:
            server = subprocess.Popen(
                [MEMDEX, "--db", str(db), "serve"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            try:
                time.sleep(3)  # warm-up
                out["with_serve"] = measure(project, db, runs)
            finally:
                server.send_signal(signal.SIGTERM)
                server.wait(timeout=30)
        click.echo(json.dumps(out, indent=2))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    cli()
