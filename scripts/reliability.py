#!/usr/bin/env python3
"""Reliability of memdex: hostile queries and files, kill -9, a full disk, locks, load (JSON out).

Every check runs real memdex processes on real SQLite files in a temporary folder, and
counts what was lost or corrupted: after each fault the index must pass ``PRAGMA
integrity_check`` and FTS5's own check, and a re-run must converge to exactly what a fresh
index of the same files holds (``canonical``). docs/reliability.md has the figures.

Examples:

    python scripts/reliability.py all                      # every check, default sizes
    python scripts/reliability.py queries --count 20000    # hostile query strings
    python scripts/reliability.py kill-index --kills 20
    python scripts/reliability.py load --readers 8 --notes 5000
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import click

sys.path.insert(0, str(Path(__file__).resolve().parent))  # reliability_kit, synth
from reliability_kit.disk import full_disk, refusals  # noqa: E402
from reliability_kit.fuzzing import fuzz_files, fuzz_queries  # noqa: E402
from reliability_kit.kills import kill_index_rounds, kill_watch_rounds  # noqa: E402
from reliability_kit.load import load, reader_loop  # noqa: E402
from reliability_kit.state import DATA, SAMPLE, fresh_index, workdir  # noqa: E402

import memdex  # noqa: E402


# -- the command line ------------------------------------------------------------------------
def emit(data: dict[str, Any]) -> None:
    click.echo(
        json.dumps(
            {"memdex": memdex.__version__, "sqlite": sqlite3.sqlite_version, **data}, indent=2, default=str
        )
    )


@click.group()
def cli() -> None:
    "memdex under hostile input, faults and load (JSON on stdout)."


keep_option = click.option(
    "--keep", type=click.Path(file_okay=False, path_type=Path), help="Work here, and keep it."
)


@cli.command()
@click.option("--count", default=5000, show_default=True, help="Query strings to try.")
@click.option("--seed", default=1, show_default=True)
@keep_option
def queries(count: int, seed: int, keep: Path | None) -> None:
    """Hostile query strings against the Serena corpus and the sample chats.

    Example:

        python scripts/reliability.py queries --count 5000
    """
    with workdir(keep) as work:
        db_path = work / "queries.db"
        fresh_index([DATA / "serena-memories", SAMPLE / "chats", SAMPLE / "memories"], db_path)
        emit({"queries": fuzz_queries(db_path, count, seed)})


@cli.command()
@click.option("--count", default=1000, show_default=True, help="Damaged files to index.")
@click.option("--seed", default=1, show_default=True)
@keep_option
def files(count: int, seed: int, keep: Path | None) -> None:
    """Damaged and crafted memory files, notes, Serena indexes and chat exports.

    Example:

        python scripts/reliability.py files --count 1000
    """
    with workdir(keep) as work:
        emit({"files": fuzz_files(work, count, seed)})


@cli.command("kill-index")
@click.option("--kills", default=12, show_default=True)
@click.option("--notes", default=3000, show_default=True, help="Generated notes in the tree.")
@click.option("--seed", default=1, show_default=True)
@keep_option
def kill_index_command(kills: int, notes: int, seed: int, keep: Path | None) -> None:
    """kill -9 of `memdex index` at random moments; check, re-run, compare with a fresh index.

    Example:

        python scripts/reliability.py kill-index --kills 12
    """
    with workdir(keep) as work:
        emit({"kill_index": kill_index_rounds(work, kills, notes, seed)})


@cli.command("kill-watch")
@click.option("--kills", default=6, show_default=True)
@click.option("--burst", default=1500, show_default=True, help="Files written in each burst.")
@click.option("--seed", default=1, show_default=True)
@keep_option
def kill_watch_command(kills: int, burst: int, seed: int, keep: Path | None) -> None:
    """kill -9 of `memdex watch` during bursts; restart it, compare with a fresh index.

    Example:

        python scripts/reliability.py kill-watch --kills 6
    """
    with workdir(keep) as work:
        emit({"kill_watch": kill_watch_rounds(work, kills, burst, seed)})


@cli.command()
@keep_option
def faults(keep: Path | None) -> None:
    """A full disk (tmpfs, file-size limit, page limit), read-only and locked indexes, a newer schema.

    Example:

        python scripts/reliability.py faults
    """
    with workdir(keep) as work:
        emit({"full_disk": full_disk(work / "disk"), "refusals": refusals(work)})


@cli.command("load")
@click.option("--readers", default=8, show_default=True, help="Reader processes.")
@click.option("--notes", default=5000, show_default=True, help="Notes in the burst.")
@click.option("--writer", type=click.Choice(["index", "watch"]), default="index", show_default=True)
@keep_option
def load_command(readers: int, notes: int, writer: str, keep: Path | None) -> None:
    """Reader processes searching while a writer ingests a burst: errors and latency percentiles.

    Example:

        python scripts/reliability.py load --readers 8 --notes 5000
    """
    with workdir(keep) as work:
        emit({"load": load(work, readers, notes, writer)})


@cli.command(hidden=True)
@click.argument("db_path", type=click.Path(path_type=Path))
@click.argument("stop_file", type=click.Path(path_type=Path))
@click.argument("seed", type=int)
@click.argument("base_tokens", type=int)
@click.argument("burst_tokens", type=int)
def reader(db_path: Path, stop_file: Path, seed: int, base_tokens: int, burst_tokens: int) -> None:
    "One reader process of `load`."
    click.echo(json.dumps(reader_loop(db_path, stop_file, seed, base_tokens, burst_tokens)))


@cli.command("all")
@click.pass_context
def all_command(ctx: click.Context) -> None:
    """Every check with its default sizes, one after another.

    Example:

        python scripts/reliability.py all > reliability.json
    """
    for command in (queries, files, kill_index_command, kill_watch_command, faults, load_command):
        ctx.invoke(command)


if __name__ == "__main__":
    cli()
