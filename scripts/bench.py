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


if __name__ == "__main__":
    cli()
