#!/usr/bin/env python3
"""What search by meaning costs: encoder throughput, embedding a corpus, searching with it.

- ``encoder``: the encoder at fp32 and int8, beside ``--previous``: CPU and wall ms per real
  chunk text as `memdex embed` runs it, cosine to fp32, the query encoder's load and a query.
- ``corpus``: `memdex index` of a folder (the Serena corpus by default), then `memdex embed`
  of it at int8 and fp32 (and by ``--previous``), alternating: each as a multiple of the index.
- ``search``: `memdex search` start to exit with meaning, on the Serena index and on a large
  one (generated notes, 100,000 random vectors), beside words only and, with ``--previous``,
  beside a previous memdex in alternate runs (their results must agree).
- ``scale``: in-process search p50/p95 with 100,000 vectors (a generated corpus whose vectors
  are random unit vectors: the cost of the search, not its quality), beside ``--previous``.
- ``quality``: scripts/eval.py with chunks embedded at one coverage (first or whole).

Examples:

    python scripts/bench_meaning.py encoder --previous ../prev
    python scripts/bench_meaning.py corpus --previous ../prev
    python scripts/bench_meaning.py search --previous ../prev
    python scripts/bench_meaning.py scale --previous ../prev
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
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
    bench.words_only()


# -- the encoder and `memdex embed`: this memdex beside a previous one (issue 30) ------------
#
# Each measurement is a process of its own (the previous memdex runs from its checkout, as
# `search` runs it), and the variants take turns: previous fp32, fp32, int8, then again.


def _chunk_texts(corpus: Path, count: int, tmp: Path) -> list[str]:
    "``count`` chunk texts of the corpus as `memdex embed` reads them, a fixed sample"
    import random

    from memdex.query.meaning.embed import passage_text

    idx = memdex.Index(tmp / "texts.db")
    idx.index(corpus)
    conn = idx.conn
    rows = conn.execute("SELECT heading, text FROM chunks ORDER BY id").fetchall()
    conn.close()
    texts = [passage_text(r["heading"], r["text"]) for r in rows]
    random.Random(30).shuffle(texts)
    return texts[:count]


@cli.command(name="_encode", hidden=True)
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--precision", type=click.Choice(["fp32", "int8"]), required=True)
@click.option("--texts", "texts_file", type=click.Path(dir_okay=False, path_type=Path), required=True)
@click.option("--out", type=click.Path(dir_okay=False, path_type=Path), required=True)
def encode(model: Path, precision: str, texts_file: Path, out: Path) -> None:
    """Encode the texts as `memdex embed` does (128 word pieces, its default threads) and a
    query as a search does, with whichever memdex is on the path; the vectors go to ``out``."""
    import inspect

    import numpy as np

    from memdex.query.meaning.embed import passage_encoder
    from memdex.query.meaning.encoder import Encoder

    texts = json.loads(texts_file.read_text())
    started = time.perf_counter()
    takes_precision = "precision" in inspect.signature(load_spec).parameters
    spec = load_spec(model, precision=precision) if takes_precision else load_spec(model)
    encoder = passage_encoder(spec)
    load_s = time.perf_counter() - started
    encoder.encode_passages(texts[:8])  # warm up
    started, cpu = time.perf_counter(), time.process_time()
    vectors = encoder.encode_passages(texts)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    np.save(out, vectors)
    started = time.perf_counter()
    query_encoder = Encoder(spec, backend="numpy", **({"threads": 1} if takes_precision else {}))
    query_load_s = time.perf_counter() - started
    query_ms = []
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1, user_api="blas"):  # as a search encodes its query
        for query in QUERIES:
            started = time.perf_counter()
            query_encoder.encode_queries([query])
            query_ms.append((time.perf_counter() - started) * 1000)
    report = {
        "load_s": load_s,
        "wall_ms_per_text": wall * 1000 / len(texts),
        "cpu_ms_per_text": cpu * 1000 / len(texts),
        "query_encoder_load_s": query_load_s,
        "query_ms": statistics.median(query_ms),
    }
    click.echo(json.dumps(report))


@cli.command()
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=MODEL, show_default=True)
@bench.SERENA_CORPUS
@click.option("--texts", "count", default=500, show_default=True, help="Chunk texts encoded a run.")
@click.option("--rounds", default=5, show_default=True, help="Runs of each variant, alternating.")
@click.option(
    "--previous",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A checkout of the memdex to compare with (its encoder at fp32), in alternate runs.",
)
@click.option(
    "--current",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A checkout to measure instead of this one (e.g. its last commit, while others edit).",
)
def encoder(
    model: Path, corpus: Path, count: int, rounds: int, previous: Path | None, current: Path | None
) -> None:
    """The encoder at fp32 and int8 (and a previous memdex's), on real chunk texts: CPU and
    wall milliseconds per text as `memdex embed` runs it, medians of alternating runs; cosine
    of each variant's vectors to this memdex's fp32 ones; the query encoder's load and a query.

    Example:

        python scripts/bench_meaning.py encoder --previous ../prev
    """
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        texts_file = folder / "texts.json"
        texts_file.write_text(json.dumps(_chunk_texts(corpus, count, folder)))
        environments = _variants(previous, current, folder)
        variants = {f"{name} fp32": (env, "fp32") for name, env in environments.items()}
        variants["current int8"] = (environments["current"], "int8")
        runs: dict[str, list[dict]] = {name: [] for name in variants}
        for _ in range(rounds):
            for name, (env, precision) in variants.items():
                out = folder / f"{name.replace(' ', '-')}.npy"
                args = ["_encode", "--model", str(model), "--precision", precision]
                done = subprocess.run(
                    _script(*args, "--texts", str(texts_file), "--out", str(out)),
                    env=env,
                    capture_output=True,
                    text=True,
                )
                if done.returncode:
                    raise SystemExit(done.stderr[-2000:])
                runs[name].append(json.loads(done.stdout))
        reference = np.load(folder / "current-fp32.npy")
        result: dict = {"model": bench.shown(model), "texts": count, "rounds": rounds}
        for name, got in runs.items():
            vectors = np.load(folder / f"{name.replace(' ', '-')}.npy")
            cosine = (vectors * reference).sum(axis=1)
            result[name] = {key: round(statistics.median(run[key] for run in got), 4) for key in got[0]}
            result[name]["cosine_to_fp32"] = {
                "min": round(float(cosine.min()), 4),
                "p1": round(float(np.percentile(cosine, 1)), 4),
                "mean": round(float(cosine.mean()), 4),
            }
        click.echo(json.dumps(result, indent=2))


@cli.command()
@bench.SERENA_CORPUS
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=MODEL, show_default=True)
@click.option("--rounds", default=3, show_default=True, help="Runs of each embedding, alternating.")
@click.option(
    "--previous",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A checkout of the memdex to compare with, embedding in alternate runs.",
)
@click.option(
    "--current",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A checkout to measure instead of this one (e.g. its last commit, while others edit).",
)
@click.option(
    "--whole", is_flag=True, help="Also embed all of each chunk (--coverage whole) at int8 and fp32."
)
def corpus(
    corpus: Path, model: Path, rounds: int, previous: Path | None, current: Path | None, whole: bool
) -> None:
    """`memdex index` of a folder (the Serena corpus), then `memdex embed` of that words-only
    index at int8 and fp32 (and by a previous memdex), each on a fresh copy, alternating:
    median wall and CPU seconds, and each embedding's time as a multiple of the index's.

    Example:

        python scripts/bench_meaning.py corpus --previous ../prev
    """
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        environments = _variants(previous, current, folder)
        # Chunk openings, as before issue 30 (whole chunks are the default since)
        first = ["--coverage", "first"]
        variants = {"current fp32": (environments["current"], ["--precision", "fp32", *first])}
        if previous is not None:
            variants["previous fp32"] = (environments["previous"], [])  # it has neither option
        variants["current int8"] = (environments["current"], ["--precision", "int8", *first])
        if whole:
            for precision in ("int8", "fp32"):
                options = ["--precision", precision, "--coverage", "whole"]
                variants[f"current {precision} whole"] = (environments["current"], options)
        words = folder / "words.db"
        index_runs = []
        samples: dict[str, list[bench.Sample]] = {name: [] for name in variants}
        for _ in range(rounds):
            for db_file in folder.glob("words.db*"):
                db_file.unlink()
            index_runs.append(
                bench.timed_process(
                    [*_memdex(words), "index", "-q", str(corpus)], env=environments["current"]
                )
            )
            for name, (env, options) in variants.items():
                copy = folder / "embed.db"
                shutil.copyfile(words, copy)
                args = [*_memdex(copy), "embed", "--model", str(model), *options]
                samples[name].append(bench.timed_process(args, env=env))
                chunks = _counts(copy)
                for db_file in folder.glob("embed.db*"):
                    db_file.unlink()
        index = bench.medians(index_runs)
        out: dict = {"corpus": bench.shown(corpus), **chunks, "index": index}
        for name, got in samples.items():
            embed = bench.medians(got)
            out[f"embed {name}"] = {
                **embed,
                "times_index": round(embed["median_s"] / index["median_s"], 1),
                "cpu_times_index": round(embed["cpu_median_s"] / index["cpu_median_s"], 1),
            }
        click.echo(json.dumps(out, indent=2))


@cli.command(name="first-run")
@bench.SERENA_CORPUS
@click.option("--rounds", default=3, show_default=True, help="Runs of each, alternating.")
@click.option(
    "--python",
    "pythons",
    multiple=True,
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Also time the memdex of this venv's Python (e.g. one without onnxruntime); repeatable.",
)
def first_run(corpus: Path, rounds: int, pythons: tuple[Path, ...]) -> None:
    """A new user's first `memdex index` of a folder, with an empty cache and no network: to
    words alone (--no-semantic), and to words and meaning with the model memdex ships (no
    --model), each on a fresh index, alternating; per Python given. Then the same command
    again, with nothing new ("again"): what every later re-index costs.

    Example:

        python scripts/bench_meaning.py first-run --python ../wheel-venv/bin/python
    """
    out: dict = {"corpus": bench.shown(corpus)}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "XDG_CACHE_HOME": str(folder / "cache")}
        env.pop("MEMDEX_INDEX_SEMANTIC", None)
        env.pop("MEMDEX_EMBED_MODEL", None)
        samples: dict[str, list[bench.Sample]] = {}
        counts: dict[str, dict[str, int]] = {}
        for _ in range(rounds):
            for python in (Path(sys.executable), *pythons):
                for name, options in (("words", ["--no-semantic"]), ("words and meaning", [])):
                    db_path = folder / "first.db"
                    for stale in [*folder.glob("first.db*"), folder / "cache"]:
                        shutil.rmtree(stale) if stale.is_dir() else stale.unlink(missing_ok=True)
                    args = [str(python), "-P", "-m", "memdex", "--db", str(db_path), "index", "-q"]
                    key = f"{python.parent.parent.name}: {name}"
                    for run in (key, f"{key}, again"):
                        samples.setdefault(run, []).append(
                            bench.timed_process([*args, *options, str(corpus)], env=env)
                        )
                    counts[key] = _counts(db_path)
        for key, got in samples.items():
            out[key] = {**bench.medians(got), **counts.get(key, {})}
    click.echo(json.dumps(out, indent=2))


# -- searching: this memdex beside a previous one (issue 30) -----------------------------------
#
# `--previous PATH` names a checkout of memdex as it was (e.g. `git worktree add ../prev
# <commit>`). Each index is built by the previous memdex and copied for this one, which
# migrates it on first use and writes its matrix file: both search the same vectors, so their
# results must agree, and the timings differ only by the code. Runs alternate between the two.

Variants = dict[str, dict[str, str]]  # name -> environment of its processes


def _variants(previous: Path | None, current: Path | None, tmp: Path) -> Variants:
    base = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = {
        "current": base
        if current is None
        else {**base, "PYTHONPATH": str(_overlay(current, tmp / "current"))}
    }
    if previous is not None:
        out["previous"] = {**base, "PYTHONPATH": str(_overlay(previous, tmp / "previous"))}
    return out


def _overlay(checkout: Path, folder: Path) -> Path:
    """A folder whose ``memdex`` is the checkout's package with ``schema`` inside it, as an
    install has it (a checkout keeps schema/ beside memdex/; the editable install of this
    checkout would otherwise lend another memdex this one's schema)."""
    package = folder / "memdex"
    package.mkdir(parents=True)
    for child in (checkout / "memdex").iterdir():
        (package / child.name).symlink_to(child.resolve())
    if not (package / "schema").exists():
        (package / "schema").symlink_to((checkout / "schema").resolve())
    return package.parent


def _builder(variants: Variants) -> dict[str, str]:
    "Who builds the indexes both search: the previous memdex when there is one."
    return variants.get("previous", variants["current"])


def _copies(built: Path, variants: Variants) -> dict[str, Path]:
    "The index as each variant searches it: the original for the builder, a copy for this one."
    out = {}
    for name in variants:
        if name == "current" and "previous" in variants:
            copy = built.with_name("current-" + built.name)
            shutil.copyfile(built, copy)
            out[name] = copy
        else:
            out[name] = built
    return out


def _memdex(db_path: Path) -> list[str]:
    """`python -m memdex`: a previous memdex may have another console script (entry point).
    -P: the folder it runs in is not on the path (a checkout's own memdex would come first)."""
    return [sys.executable, "-P", "-m", "memdex", "--db", str(db_path)]


def _script(*args: str) -> list[str]:
    return [sys.executable, "-P", str(Path(__file__).resolve()), *args]


@cli.command(name="_synthesise", hidden=True)
@click.option("--db", "db_path", type=click.Path(path_type=Path), required=True)
@click.option("--notes", type=int, required=True)
@click.option("--vectors", type=int, required=True)
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), required=True)
def synthesise(db_path: Path, notes: int, vectors: int, model: Path) -> None:
    """Index generated notes and give their first ``vectors`` chunks random unit vectors, with
    whichever memdex is on the path (only what every memdex with vectors has)."""
    import numpy as np

    from memdex.query.meaning.vectors import quantize
    from memdex.store import db

    spec = load_spec(model)
    name = vector_model(spec)
    folder = db_path.parent / "notes"
    synth.write_notes(folder, notes)
    idx = memdex.Index(db_path)
    idx.index(folder)
    conn = idx.conn
    ids = [r[0] for r in conn.execute("SELECT id FROM chunks ORDER BY id LIMIT ?", (vectors,))]
    rng = np.random.default_rng(3)
    with db.transaction(conn):
        conn.execute(
            db.query("embedding_model_upsert"),
            {"name": name, "dim": spec.dim, "source": str(model.resolve()), "now": "2026-01-01T00:00:00Z"},
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
    click.echo(
        json.dumps({"chunks": conn.execute("SELECT count(*) FROM chunks").fetchone()[0], "vectors": len(ids)})
    )
    conn.close()


def _counts(db_path: Path) -> dict[str, int]:
    import sqlite3

    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as conn:
        chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
        vectors = conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0]
    return {"chunks": chunks, "vectors": vectors}


def _kept(work: Path | None, tmp: Path, name: str, keep: bool) -> tuple[Path, bool]:
    "Where an index is built (--work, else a temporary folder), and whether --keep found it."
    db_path = (work or tmp) / name / f"{name}.db"
    if keep and db_path.exists():
        return db_path, True
    if db_path.parent.exists():
        shutil.rmtree(db_path.parent)
    db_path.parent.mkdir(parents=True)
    return db_path, False


def _build_serena(db_path: Path, corpus: Path, model: Path, env: dict[str, str]) -> dict:
    memdex_cli = _memdex(db_path)
    bench.timed_process([*memdex_cli, "index", "-q", str(corpus)], env=env)
    bench.timed_process([*memdex_cli, "embed", "--model", str(model)], env=env)
    return {"corpus": bench.shown(corpus)}


def _build_synthetic(db_path: Path, notes: int, vectors: int, model: Path, env: dict[str, str]) -> dict:
    args = ["_synthesise", "--db", str(db_path), "--notes", str(notes), "--vectors", str(vectors)]
    out = subprocess.run(_script(*args, "--model", str(model)), env=env, capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(out.stderr[-2000:])
    return {"notes": notes, **json.loads(out.stdout)}


def _results(db_path: Path, query: str, env: dict[str, str]) -> list[str]:
    out = subprocess.run(
        [*_memdex(db_path), "search", query, "--json", "--limit", "20"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return [f"{r['path']}#{r.get('line_start')}" for r in json.loads(out.stdout)["results"]]


def _cli_searches(indexes: dict[str, Path], variants: Variants, queries: list[str], runs: int) -> dict:
    "`memdex search` start to exit, with meaning and words only, each variant in turn."
    samples: dict[str, list[bench.Sample]] = {}
    for name, db_path in indexes.items():  # first use: migrate, write the matrix file, warm up
        bench.timed_process([*_memdex(db_path), "search", queries[0]], env=variants[name])
    for i in range(runs):
        query = queries[i % len(queries)]
        for name, db_path in indexes.items():
            memdex_cli = [*_memdex(db_path), "search", query]
            env = variants[name]
            samples.setdefault(f"{name} meaning", []).append(bench.timed_process(memdex_cli, env=env))
            samples.setdefault(f"{name} words", []).append(
                bench.timed_process([*memdex_cli, "--no-semantic"], env=env)
            )
        samples.setdefault("python -c pass", []).append(bench.timed_process([sys.executable, "-c", "pass"]))
    out: dict = {name: bench.medians(s) for name, s in samples.items()}
    if len(indexes) == 2:
        same = [
            _results(indexes["previous"], q, variants["previous"])
            == _results(indexes["current"], q, variants["current"])
            for q in queries
        ]
        out["same_results"] = f"{sum(same)} of {len(same)} queries"
    return out


@cli.command()
@bench.SERENA_CORPUS
@click.option("--notes", default=28_600, show_default=True, help="Generated notes for the large index.")
@click.option("--vectors", default=100_000, show_default=True, help="Random vectors in the large index.")
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=MODEL, show_default=True)
@click.option("--runs", default=11, show_default=True, help="Runs of each search command, alternating.")
@click.option(
    "--previous",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A checkout of the memdex to compare with, searched in alternate runs.",
)
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=Path),
    help="Build the indexes here (and keep them); default: a temporary folder.",
)
@click.option(
    "--keep", is_flag=True, help="Reuse the indexes --work already holds (built by the same memdexes)."
)
@click.option(
    "--current",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A checkout to measure instead of this one (e.g. its last commit, while others edit).",
)
def search(
    corpus: Path,
    notes: int,
    vectors: int,
    model: Path,
    runs: int,
    previous: Path | None,
    work: Path | None,
    keep: bool,
    current: Path | None,
) -> None:
    """`memdex search` start to exit with meaning, on the Serena index and on a large one
    (generated notes, random vectors), beside words only and beside a previous memdex.

    Example:

        python scripts/bench_meaning.py search --previous ../prev --runs 11
    """
    with tempfile.TemporaryDirectory() as tmp:
        variants = _variants(previous, current, Path(tmp))
        out: dict = {"runs": runs, "variants": sorted(variants)}
        serena, kept = _kept(work, Path(tmp), "serena", keep)
        out["serena"] = (
            {"corpus": bench.shown(corpus)}
            if kept
            else _build_serena(serena, corpus, model, _builder(variants))
        )
        out["serena"] |= _counts(serena)
        out["serena"] |= _cli_searches(_copies(serena, variants), variants, QUERIES, runs)
        large, kept = _kept(work, Path(tmp), "large", keep)
        out["large"] = (
            {"notes": notes} if kept else _build_synthetic(large, notes, vectors, model, _builder(variants))
        )
        out["large"] |= _counts(large)
        out["large"] |= _cli_searches(_copies(large, variants), variants, QUERIES, runs)
        click.echo(json.dumps(out, indent=2))


@cli.command(name="_latency", hidden=True)
@click.option("--db", "db_path", type=click.Path(path_type=Path), required=True)
@click.option("--queries", "count", type=int, required=True)
@click.option("--notes", type=int, required=True)
def latency(db_path: Path, count: int, notes: int) -> None:
    """Search in this process, once all is loaded: per query (wall ms, CPU ms, meaning used, the
    meaning pass's own ms, wall ms of the same search by words alone)."""
    from memdex.query.engine import RESIDENT_AFTER

    # The model and the vectors loaded, and an index that stays: its query encoder moves to
    # onnxruntime after a few searches, built on a thread of its engine; measured once it has.
    index = memdex.Index(db_path, stays=True)
    queries = [q["query"] for q in synth.queries(notes)][:count] + QUERIES
    for query in queries[:RESIDENT_AFTER]:
        index.search(query, semantic=True)
    for thread in threading.enumerate():
        if thread.name == "memdex-query-encoder":
            thread.join()
    rows = []
    for query in queries:
        started = time.perf_counter()
        index.search(query, semantic=False)
        words_ms = (time.perf_counter() - started) * 1000
        started, cpu = time.perf_counter(), time.process_time()
        result = index.search(query, semantic=True)
        wall_ms = (time.perf_counter() - started) * 1000
        cpu_ms = (time.process_time() - cpu) * 1000
        used = bool(result.semantic and result.semantic["used"])
        pass_ms = result.semantic["ms"] if used and result.semantic else 0.0
        rows.append((round(wall_ms, 2), round(cpu_ms, 2), used, round(pass_ms, 2), round(words_ms, 2)))
    index.close()
    click.echo(json.dumps(rows))


@cli.command()
@click.option("--notes", default=28_600, show_default=True, help="Generated notes (about 3.5 chunks each).")
@click.option("--vectors", default=100_000, show_default=True, help="Random vectors to search.")
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=MODEL, show_default=True)
@click.option("--rounds", default=5, show_default=True, help="Processes per variant, alternating.")
@click.option(
    "--previous",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A checkout of the memdex to compare with, in alternate processes.",
)
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=Path),
    help="Build the indexes here (and keep them); default: a temporary folder.",
)
@click.option(
    "--keep", is_flag=True, help="Reuse the indexes --work already holds (built by the same memdexes)."
)
@click.option(
    "--current",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="A checkout to measure instead of this one (e.g. its last commit, while others edit).",
)
def scale(
    notes: int,
    vectors: int,
    model: Path,
    rounds: int,
    previous: Path | None,
    work: Path | None,
    keep: bool,
    current: Path | None,
) -> None:
    """In-process search latency with meaning at many vectors (random unit vectors: the cost
    of the search, not its quality): p50/p95 over 45 queries a process, wall and CPU.

    Example:

        python scripts/bench_meaning.py scale --previous ../prev
    """
    with tempfile.TemporaryDirectory() as tmp:
        variants = _variants(previous, current, Path(tmp))
        large, kept = _kept(work, Path(tmp), "large", keep)
        out: dict = (
            {"notes": notes} if kept else _build_synthetic(large, notes, vectors, model, _builder(variants))
        )
        out |= _counts(large)
        indexes = _copies(large, variants)
        for name, db_path in indexes.items():  # first use: migrate, write the matrix file
            bench.timed_process([*_memdex(db_path), "search", QUERIES[0]], env=variants[name])
        rows: dict[str, list] = {name: [] for name in indexes}
        for _ in range(rounds):
            for name, db_path in indexes.items():
                args = ["_latency", "--db", str(db_path), "--queries", "40", "--notes", str(notes)]
                done = subprocess.run(_script(*args), env=variants[name], capture_output=True, text=True)
                if done.returncode:
                    raise SystemExit(done.stderr[-2000:])
                rows[name] += json.loads(done.stdout)
        for name, got in rows.items():
            meaning = [r for r in got if r[2]]
            out[name] = {
                "searches": len(got),
                "meaning_used": len(meaning),
                "p50_ms": round(statistics.median(r[0] for r in got), 1),
                "p95_ms": round(bench.percentile([r[0] for r in got], 95), 1),
                "cpu_p50_ms": round(statistics.median(r[1] for r in got), 1),
                "cpu_p95_ms": round(bench.percentile([r[1] for r in got], 95), 1),
                "words_only_p50_ms": round(statistics.median(r[4] for r in got), 1),
                "words_only_p95_ms": round(bench.percentile([r[4] for r in got], 95), 1),
                # The meaning pass alone (encoding the query, the product, its SQL), where it ran.
                "pass_p50_ms": round(statistics.median(r[3] for r in meaning), 1) if meaning else None,
                "pass_p95_ms": round(bench.percentile([r[3] for r in meaning], 95), 1) if meaning else None,
            }
        click.echo(json.dumps(out, indent=2))


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.option(
    "--coverage",
    type=click.Choice(["first", "whole"]),
    default="whole",
    show_default=True,
    help="How much of each chunk the model reads (memdex/query/meaning/windows.py).",
)
@click.option(
    "--precision",
    type=click.Choice(["int8", "fp32"]),
    help="The encoder's precision, for passages and queries alike (default: the model's default).",
)
@click.pass_context
def quality(ctx: click.Context, coverage: str, precision: str | None) -> None:
    """scripts/eval.py with chunks embedded at one coverage; every other option is eval.py's.
    Its JSON's embed section says what embedding cost (seconds, CPU seconds, windows read).

    Example:

        python scripts/bench_meaning.py quality --set serena --model ../shared/data/models/all-MiniLM-L6-v2
    """
    import eval as evaluation

    from memdex.query.meaning import embed, model

    embed.DEFAULT_COVERAGE = coverage  # type: ignore[assignment]
    if precision:
        model.DEFAULT_PRECISION = precision  # type: ignore[assignment]
    evaluation.main.main(ctx.args, prog_name="eval.py", standalone_mode=False)


if __name__ == "__main__":
    cli()
