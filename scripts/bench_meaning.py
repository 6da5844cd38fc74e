#!/usr/bin/env python3
"""What search by meaning costs: encoder throughput, embedding a corpus, searching with it.

- ``encoder``: texts per second of each backend at 64, 128 and 256 word pieces (batch 16).
- ``corpus``: `memdex index` then `memdex embed` of a folder (the Serena corpus by default),
  seconds and bytes per 1,000 chunks, beside the words-only index time; then `memdex search`
  end to end with meaning and without, alternating runs, medians.
- ``scale``: in-process search p50/p95 with vectors for N chunks (a generated corpus whose
  vectors are random unit vectors: the cost of the search, not its quality).

Examples:

    python scripts/bench_meaning.py encoder
    python scripts/bench_meaning.py corpus --runs 11
    python scripts/bench_meaning.py scale --notes 20000
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import click

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # bench.py's process helpers, synth.py's corpora
import bench  # noqa: E402
import synth  # noqa: E402

import memdex  # noqa: E402
from memdex.query.meaning.embed import vector_model  # noqa: E402
from memdex.query.meaning.model import load_spec  # noqa: E402

DATA = HERE.parent.parent / "shared" / "data"
MODEL = DATA / "models" / "all-MiniLM-L6-v2"
QUERIES = [
    "how do I stop hooks from running on windows",
    "what did we decide about merge queues",
    "agent forgets instructions after compaction",
    "nobody could look anything up",
    "flaky tests in CI",
]


@click.group()
def cli() -> None:
    "Benchmarks of search by meaning."


@cli.command()
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=MODEL, show_default=True)
@click.option("--texts", default=96, show_default=True, help="Texts per measurement.")
def encoder(model: Path, texts: int) -> None:
    """Texts per second of each backend at 64, 128 and 256 word pieces.

    Example:

        python scripts/bench_meaning.py encoder
    """
    from dataclasses import replace

    from memdex.query.meaning.encoder import Encoder, onnxruntime_available

    spec = load_spec(model)
    sentence = "The watcher re-reads a changed memory file and writes its chunks again. "
    out: dict = {"model": spec.name, "texts": texts}
    for backend in ["numpy", *(["onnx"] if onnxruntime_available() else [])]:
        for pieces in (64, 128, 256):
            enc = Encoder(replace(spec, max_length=pieces), backend=backend)  # type: ignore[arg-type]
            batch = [sentence * 40] * texts  # long enough to fill the window
            enc.encode_passages(batch[:16])  # warm up
            started = time.perf_counter()
            enc.encode_passages(batch)
            out[f"{backend}@{pieces}"] = round(texts / (time.perf_counter() - started), 1)
    click.echo(json.dumps(out, indent=2))


@cli.command()
@click.option(
    "--corpus",
    type=click.Path(file_okay=False, path_type=Path),
    default=DATA / "serena-memories",
    show_default=True,
)
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=MODEL, show_default=True)
@click.option("--runs", default=11, show_default=True, help="Runs of each search command, alternating.")
def corpus(corpus: Path, model: Path, runs: int) -> None:
    """Index, embed, and search a folder with and without meaning.

    Example:

        python scripts/bench_meaning.py corpus --runs 11
    """
    with tempfile.TemporaryDirectory() as tmp:
        db_path = Path(tmp) / "bench.db"
        memdex_cli = [*bench.memdex_command(), "--db", str(db_path)]
        index_s, _ = bench.timed_process([*memdex_cli, "index", "-q", str(corpus)])
        embed_s, embed_mb = bench.timed_process([*memdex_cli, "embed", "--model", str(model)])
        conn = memdex.open_index(db_path, create=False)
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        vector_bytes = conn.execute(
            "SELECT sum(length(vector) + 8 + length(text_hash) + length(model)) FROM chunk_vectors"
        ).fetchone()[0]
        conn.close()
        searches: dict[str, list[tuple[float, float]]] = {name: [] for name in ("words", "meaning", "python")}
        for i in range(runs):
            query = QUERIES[i % len(QUERIES)]
            searches["words"].append(bench.timed_process([*memdex_cli, "search", query, "--no-semantic"]))
            searches["meaning"].append(bench.timed_process([*memdex_cli, "search", query]))
            searches["python"].append(bench.timed_process([sys.executable, "-c", "pass"]))
        out = {
            "corpus": bench.shown(corpus),
            "chunks": chunks,
            "index_s": round(index_s, 2),
            "embed_s": round(embed_s, 2),
            "embed_chunks_per_s": round(chunks / embed_s, 1),
            "embed_peak_rss_mb": round(embed_mb, 1),
            "vector_bytes_per_1000_chunks": round(vector_bytes / chunks * 1000),
            "search": {name: bench.medians(s) for name, s in searches.items()},
        }
        click.echo(json.dumps(out, indent=2))


@cli.command()
@click.option("--notes", default=20000, show_default=True, help="Generated notes (about 5 chunks each).")
@click.option("--chunks", "target", default=100_000, show_default=True, help="Vectors to search.")
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=MODEL, show_default=True)
def scale(notes: int, target: int, model: Path) -> None:
    """In-process search latency with vectors for many chunks (random unit vectors).

    Example:

        python scripts/bench_meaning.py scale --notes 20000
    """
    import numpy as np

    from memdex.query.meaning.vectors import quantize
    from memdex.store import db

    spec = load_spec(model)
    name = vector_model(spec)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        synth.write_notes(folder, notes)
        db_path = Path(tmp) / "bench.db"
        conn = memdex.open_index(db_path)
        memdex.index_paths(conn, [folder])
        ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id LIMIT ?", (target,))]
        rng = np.random.default_rng(3)
        with db.transaction(conn):
            conn.execute(
                db.query("embedding_model_upsert"),
                {"name": name, "dim": spec.dim, "source": str(model), "now": "2026-01-01T00:00:00Z"},
            )
            for start in range(0, len(ids), 5000):
                block = rng.standard_normal((len(ids[start : start + 5000]), spec.dim)).astype(np.float32)
                block /= np.linalg.norm(block, axis=1, keepdims=True)
                conn.executemany(
                    db.query("vector_upsert"),
                    [
                        {"chunk_id": cid, "model": name, "text_hash": str(cid), "scale": s, "vector": v}
                        for cid, (s, v) in zip(ids[start:], map(quantize, block), strict=False)
                    ],
                )
        queries = [q["query"] for q in synth.queries(notes)][:40]
        out: dict = {"notes": notes, "vectors": len(ids)}
        for label, semantic in (("words", False), ("words+meaning", True)):
            memdex.search(conn, queries[0], semantic=semantic)  # load the model and the vectors once
            times = []
            for q in queries:
                started = time.perf_counter()
                memdex.search(conn, q, semantic=semantic)
                times.append((time.perf_counter() - started) * 1000)
            out[label] = {
                "p50_ms": round(statistics.median(times), 1),
                "p95_ms": round(bench.percentile(times, 95), 1),
            }
        conn.close()
        click.echo(json.dumps(out, indent=2))


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option(
    "--coverage",
    type=click.Choice(["first", "whole"]),
    default="whole",
    show_default=True,
    help="How much of each chunk the model reads (memdex/query/meaning/windows.py).",
)
@click.pass_context
def quality(ctx: click.Context, coverage: str) -> None:
    """scripts/eval.py with chunks embedded at one coverage; every other option is eval.py's.
    Its JSON's embed section says what embedding cost (seconds, CPU seconds, windows read).

    Example:

        python scripts/bench_meaning.py quality --set serena --model ../shared/data/models/all-MiniLM-L6-v2
    """
    import eval as evaluation

    from memdex.query.meaning import embed

    embed.DEFAULT_COVERAGE = coverage  # type: ignore[assignment]
    evaluation.main.main(ctx.args, prog_name="eval.py", standalone_mode=False)


if __name__ == "__main__":
    cli()
