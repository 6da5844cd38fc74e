#!/usr/bin/env python3
"""Speed of memdex, measured side by side with ripgrep on the same files (JSON out).

Times are medians of repeated runs; this machine is shared and noisy, so ratios against
ripgrep, run in the same loop, say more than absolute figures.

Examples:

    python scripts/bench.py core                 # index ../shared/data/serena-memories, CLI search
    python scripts/bench.py core --runs 9 --corpus ../shared/data/serena-memories-flat
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click

import memdex

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # scripts/synth.py, the corpus generator
DATA = HERE.parent.parent / "shared" / "data"
QUERIES = [
    "disableAllHooks on Windows",
    "worktree isolation",
    "what did we decide about frontmatter migrations?",
    "rate limit graphql",
    "Chatty",
]


def median_seconds(fn: Callable[[], object], runs: int) -> dict[str, float]:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return {
        "median_s": round(statistics.median(times), 4),
        "min_s": round(min(times), 4),
        "max_s": round(max(times), 4),
        "runs": runs,
    }


def run_quiet(args: list[str]) -> None:
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


@click.group()
def cli() -> None:
    "Benchmarks of memdex (JSON on stdout)."


@cli.command()
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=DATA / "serena-memories",
    show_default=True,
)
@click.option("--runs", default=5, show_default=True, help="Repetitions of each measurement.")
def core(corpus: Path, runs: int) -> None:
    """Full index, unchanged re-scan, and CLI search from process start to printed result.

    Example:

        python scripts/bench.py core --runs 5
    """
    files = sum(1 for _ in corpus.rglob("*.md"))
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "bench.db"

        def full_index() -> None:
            for p in Path(tmp).glob("bench.db*"):
                p.unlink()
            conn = memdex.open_index(db_path)
            memdex.index_paths(conn, [corpus])
            conn.close()

        def rescan() -> None:
            conn = memdex.open_index(db_path)
            memdex.index_paths(conn, [corpus])
            conn.close()

        index = median_seconds(full_index, runs)
        unchanged = median_seconds(rescan, runs)
        memdex_cmd = shutil.which("memdex") or ""
        search_cmd = [memdex_cmd] if memdex_cmd else [sys.executable, "-m", "memdex"]
        searches = {}
        rg = shutil.which("rg")
        for query in QUERIES:
            cli_time = median_seconds(
                lambda q=query: run_quiet([*search_cmd, "--db", str(db_path), "search", q]), runs
            )
            entry = {"memdex_cli": cli_time}
            if rg:
                words = [w for w in query.replace("?", "").split() if len(w) > 2]
                pattern = "|".join(words)
                rg_time = median_seconds(
                    lambda p=pattern, rg=rg: run_quiet([rg, "-l", "-i", "-e", p, str(corpus)]), runs
                )
                rg_files = subprocess.run(
                    [rg, "-l", "-i", "-e", pattern, str(corpus)], capture_output=True, text=True
                ).stdout.count("\n")
                entry["ripgrep_files_listed"] = rg_files
                entry["ripgrep"] = rg_time
                entry["ratio_memdex_to_ripgrep"] = round(cli_time["median_s"] / rg_time["median_s"], 1)
            searches[query] = entry
        conn = memdex.open_index(db_path)
        in_process = median_seconds(lambda: [memdex.search(conn, q) for q in QUERIES], runs)
        db_bytes = sum(p.stat().st_size for p in Path(tmp).glob("bench.db*"))
    result = {
        "memdex": memdex.__version__,
        "corpus": str(corpus),
        "markdown_files": files,
        "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
        "full_index": index,
        "unchanged_rescan": unchanged,
        "cli_search": searches,
        "cli_search_median_s": round(
            statistics.median(s["memdex_cli"]["median_s"] for s in searches.values()), 4
        ),
        "in_process_search_median_ms": round(in_process["median_s"] / len(QUERIES) * 1000, 2),
        "database_bytes": db_bytes,
        "ripgrep": shutil.which("rg") is not None,
    }
    click.echo(json.dumps(result, indent=2))


@cli.command()
@click.option(
    "--conversations", default=5000, show_default=True, help="How many to generate (scripts/synth.py)."
)
def chats(conversations: int) -> None:
    """Index generated chat exports (half ChatGPT, half Claude) from scratch.

    Example:

        python scripts/bench.py chats --conversations 5000
    """
    import synth

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "exports"
        files = synth.write_chats(folder, conversations)
        db_path = Path(tmp) / "chats.db"
        conn = memdex.open_index(db_path)
        started = time.perf_counter()
        report = memdex.index_paths(conn, [folder])
        seconds = time.perf_counter() - started
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        found = memdex.search(conn, f"zqplant{conversations // 2}").hits
        conn.close()
        click.echo(
            json.dumps(
                {
                    "memdex": memdex.__version__,
                    "conversations": conversations,
                    "files": len(files),
                    "documents": report.documents,
                    "chunks": chunks,
                    "index_seconds": round(seconds, 2),
                    "conversations_per_second": round(conversations / seconds),
                    "database_bytes": sum(p.stat().st_size for p in Path(tmp).glob("chats.db*")),
                    "planted_term_found": [h.key for h in found],
                    "goal_seconds": 30,
                },
                indent=2,
            )
        )


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _found(conn: object, token: str) -> int:
    rows = memdex.search(conn, token, limit=500, use_synonyms=False).hits  # type: ignore[arg-type]
    return len(rows)


def _wait(predicate: Callable[[], bool], timeout: float) -> float:
    started = time.perf_counter()
    while not predicate():
        if time.perf_counter() - started > timeout:
            raise SystemExit(f"timed out after {timeout} s")
        time.sleep(0.005)
    return time.perf_counter() - started


@cli.command()
@click.option(
    "--corpus",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=DATA / "serena-memories",
    show_default=True,
)
@click.option("--edits", default=50, show_default=True, help="Single-file edits to time.")
@click.option("--burst", default=200, show_default=True, help="Files written at once.")
def watch(corpus: Path, edits: int, burst: int) -> None:
    """memdex watch: edit -> searchable latency, a burst of new files, catch-up on start.

    Runs `memdex watch` as its own process on a copy of the corpus and searches from this
    one, as a user would.

    Example:

        python scripts/bench.py watch --edits 50 --burst 200
    """
    import random

    from memdex.lock import holder
    from memdex.service import read_state

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        shutil.copytree(corpus, root)
        db_path = Path(tmp) / "watch.db"
        conn = memdex.open_index(db_path)
        memdex.index_paths(conn, [root])

        def start() -> tuple[subprocess.Popen[bytes], float]:
            started = time.perf_counter()
            proc = subprocess.Popen(
                [sys.executable, "-m", "memdex", "--db", str(db_path), "watch"], stderr=subprocess.DEVNULL
            )
            _wait(
                lambda: (
                    (holder(db_path) or {}).get("pid") == proc.pid
                    and ((read_state(db_path) or {}).get("pid") == proc.pid)
                    and (read_state(db_path) or {}).get("catch_up") is not None
                ),
                60,
            )
            return proc, time.perf_counter() - started

        proc, _ = start()
        files = sorted(root.rglob("*.md"))
        rng = random.Random(7)
        latencies = []
        for i in range(edits):
            target = rng.choice([f for f in files if not f.name.endswith("-index.md")])
            token = f"zqedit{i:03d}marker"
            with open(target, "a", encoding="utf-8") as f:
                f.write(f"\n{token}\n")
            latencies.append(_wait(lambda t=token: _found(conn, t) == 1, 30))
        burst_dir = root / "burst"
        burst_dir.mkdir()
        written = time.perf_counter()
        for i in range(burst):
            (burst_dir / f"b{i:04d}.md").write_text(f"# Burst {i}\n\nzqburstmarker item {i}\n")
        write_s = time.perf_counter() - written
        burst_s = _wait(lambda: _found(conn, "zqburstmarker") == burst, 60) + write_s
        proc.terminate()
        proc.wait(30)
        proc, startup = start()  # nothing changed while it was off
        catch_up = (read_state(db_path) or {}).get("catch_up", {})
        proc.terminate()
        proc.wait(30)
        conn.close()
    click.echo(
        json.dumps(
            {
                "memdex": memdex.__version__,
                "corpus": str(corpus),
                "files": len(files),
                "edit_to_searchable_s": {
                    "p50": round(statistics.median(latencies), 3),
                    "p95": round(percentile(latencies, 95), 3),
                    "max": round(max(latencies), 3),
                    "edits": edits,
                },
                "burst": {
                    "files": burst,
                    "all_searchable_s": round(burst_s, 3),
                    "writing_them_s": round(write_s, 3),
                },
                "catch_up_nothing_changed": {
                    "catch_up_s": catch_up.get("seconds"),
                    "unchanged": catch_up.get("unchanged"),
                    "process_start_to_ready_s": round(startup, 3),
                },
                "goals": {"edit_p50_s": 0.5, "burst_200_s": 2.0, "catch_up_s": 0.5},
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    cli()
