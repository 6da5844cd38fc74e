#!/usr/bin/env python3
"""What memdex's secret masking catches, wrongly catches, and costs, on real logs.

``scan`` reads every text file under the corpora (default: ../shared/data's chats, memories
and Serena folders) and runs memdex's rules (``memdex.secrets.mask``) over each file, and --
when detect-secrets is installed (``pip install detect-secrets``; memdex does not depend on
it) -- each of its plugins over each line, as its own scanner does. It prints what each
found, by kind, with a few samples in context, so false positives can be read by eye.

``index`` times ``memdex index`` of the same corpora into a fresh index, masked (the default)
and not (``--keep-secrets``), alternating, and reports medians of wall and CPU time.

Examples:

    python scripts/bench_secrets.py scan --samples 5
    python scripts/bench_secrets.py index --runs 5
"""

from __future__ import annotations

import importlib
import json
import os
import resource
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import click

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
import bench  # noqa: E402  (scripts/: the benchmarks' helpers)

from memdex import secrets  # noqa: E402

SHARED = HERE.parent.parent / "shared" / "data"
CORPORA = ("chats", "mnemonic", "serena-memories", "longmemeval-dev", "locomo-dev")
MEMDEX = str(Path(sys.executable).parent / "memdex")
TEXT = {".md", ".txt", ".json", ".jsonl", ".org", ".rst", ".history", ""}

DETECT_SECRETS = (
    "aws:AWSKeyDetector",
    "github_token:GitHubTokenDetector",
    "gitlab_token:GitLabTokenDetector",
    "private_key:PrivateKeyDetector",
    "slack:SlackDetector",
    "stripe:StripeDetector",
    "jwt:JwtTokenDetector",
    "basic_auth:BasicAuthDetector",
    "openai:OpenAIDetector",
    "keyword:KeywordDetector",
    "high_entropy_strings:Base64HighEntropyString",
    "high_entropy_strings:HexHighEntropyString",
)


def files(roots: list[Path]) -> list[Path]:
    found = []
    for root in roots:
        for path in sorted(root.rglob("*")):
            if path.is_file() and path.suffix in TEXT and not path.name.startswith("LICENSE"):
                found.append(path)
    return found


def context(text: str, start: int, end: int, width: int = 40) -> str:
    return (
        text[max(0, start - width) : start] + "«" + text[start:end][:80] + "»" + text[end : end + width]
    ).replace("\n", "⏎")


def _name(path: Path) -> str:
    return str(path.relative_to(SHARED)) if path.is_relative_to(SHARED) else str(path)


def detect_secrets_plugins() -> list[tuple[str, object]]:
    try:
        from detect_secrets.settings import default_settings
    except ImportError:
        return []
    default_settings().__enter__()  # the plugins read their settings from a global
    plugins = []
    for where in DETECT_SECRETS:
        module, _, cls = where.partition(":")
        plugins.append((cls, getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)()))
    return plugins


@click.group()
def cli() -> None:
    "Measure secret masking on real logs."
    bench.words_only()


@cli.command()
@click.argument("roots", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--samples", default=5, show_default=True, help="Samples shown per detector and kind.")
@click.option("--no-detect-secrets", is_flag=True, help="Run memdex's rules alone.")
@click.option("--out", type=click.Path(path_type=Path), help="Also write every finding as JSON here.")
@click.option(
    "--index",
    "index_db",
    type=click.Path(exists=True, path_type=Path),
    help="Scan the chunks of this index (made with --keep-secrets) instead of files: the text "
    "ingest masks, each chunk as one text.",
)
def scan(
    roots: tuple[Path, ...], samples: int, no_detect_secrets: bool, out: Path | None, index_db: Path | None
) -> None:
    "What each detector finds in the corpora: counts by kind, samples in context, time."
    if index_db is not None:
        with sqlite3.connect(index_db) as conn:
            rows = conn.execute(
                "SELECT f.path, c.text FROM chunks c JOIN documents d ON d.id = c.document_id "
                "JOIN files f ON f.id = d.file_id ORDER BY c.id"
            ).fetchall()
        texts = [(Path(p), t) for p, t in rows]
    else:
        paths = files(list(roots) or [SHARED / c for c in CORPORA])
        texts = [(p, p.read_text("utf-8", "replace")) for p in paths]
    size = sum(len(t.encode()) for _, t in texts)
    click.echo(f"{len(texts)} texts, {size / 1e6:.1f} MB")
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    started, cpu = time.perf_counter(), time.process_time()
    for path, text in texts:
        masked = secrets.mask(text)
        for start, end, _, kind in masked.edits:
            found["memdex"][kind].append(f"{_name(path)}: {context(text, start, end)}")
    timings = {"memdex": (time.perf_counter() - started, time.process_time() - cpu)}
    plugins = [] if no_detect_secrets else detect_secrets_plugins()
    for name, plugin in plugins:
        started, cpu = time.perf_counter(), time.process_time()
        for path, text in texts:
            for n, line in enumerate(text.splitlines(), 1):
                # analyze_line, as its scanner calls it: the entropy plugins' thresholds apply there
                for potential in plugin.analyze_line(filename=str(path), line=line, line_number=n):  # type: ignore[attr-defined]
                    value = potential.secret_value or ""
                    at = line.find(value)
                    found[f"detect-secrets {name}"][name].append(
                        f"{_name(path)}:{n}: {context(line, at, at + len(value))}"
                    )
        timings[f"detect-secrets {name}"] = (time.perf_counter() - started, time.process_time() - cpu)
    for detector, kinds in found.items():
        total = sum(len(v) for v in kinds.values())
        wall, cpu_s = timings[detector]
        click.echo(f"\n== {detector}: {total} found, {wall:.2f} s wall, {cpu_s:.2f} s CPU")
        for kind, hits in sorted(kinds.items(), key=lambda kv: -len(kv[1])):
            click.echo(f"  {kind}: {len(hits)}")
            for hit in hits[:samples]:
                click.echo(f"      {hit}")
    for detector in timings:
        if detector not in found:
            wall, cpu_s = timings[detector]
            click.echo(f"\n== {detector}: 0 found, {wall:.2f} s wall, {cpu_s:.2f} s CPU")
    if out:
        out.write_text(json.dumps(found, indent=1, ensure_ascii=False))


def _index_once(roots: list[Path], keep: bool) -> tuple[float, float]:
    with tempfile.TemporaryDirectory() as tmp:
        args = [MEMDEX, "--db", os.path.join(tmp, "i.db"), "index", "-q", *map(str, roots)]
        if keep:
            args.append("--keep-secrets")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(args, check=False, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


@cli.command()
@click.argument("roots", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option("--runs", default=5, show_default=True, help="Runs of each, alternating.")
def index(roots: tuple[Path, ...], runs: int) -> None:
    "Median wall and CPU time of `memdex index` of the corpora, masked and --keep-secrets."
    chosen = list(roots) or [SHARED / c for c in CORPORA]
    times: dict[str, list[tuple[float, float]]] = {"masked": [], "kept": []}
    for _ in range(runs):
        times["masked"].append(_index_once(chosen, keep=False))
        times["kept"].append(_index_once(chosen, keep=True))
    result = {}
    for name, pairs in times.items():
        result[name] = {
            "wall_s": round(statistics.median(w for w, _ in pairs), 3),
            "cpu_s": round(statistics.median(c for _, c in pairs), 3),
        }
    result["wall_ratio"] = round(result["masked"]["wall_s"] / result["kept"]["wall_s"], 3)  # type: ignore[assignment]
    result["cpu_ratio"] = round(result["masked"]["cpu_s"] / result["kept"]["cpu_s"], 3)  # type: ignore[assignment]
    click.echo(json.dumps({"runs": runs, "roots": [str(r) for r in chosen], **result}, indent=1))


if __name__ == "__main__":
    cli()
