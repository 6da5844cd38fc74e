#!/usr/bin/env python3
"""What `memdex serve` saves: a command-line search answered by the resident process, and
HTTP under concurrent clients.

- ``cli``: `memdex search` start to exit with meaning and words only, answered by a running
  `memdex serve` and in-process (MEMDEX_NO_SERVER=1), beside `python -c pass`: alternating
  runs, medians of wall and CPU time. A served search's CPU is the client's; the server's
  share per search is read from /proc before and after, and reported beside it.
- ``http``: CLIENTS threads x SEARCHES searches each over loopback (GET /search, one
  keep-alive connection per client): errors, requests per second, p50/p95/p99.

Both build the Serena corpus's index with vectors (the shared MiniLM) unless --db names
one already built (`memdex index` and `memdex embed` take some minutes).

Examples:

    python scripts/bench_serve.py cli --runs 21
    python scripts/bench_serve.py http --clients 8 --searches 500 --db /tmp/serena.db
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlencode, urlsplit

import click

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import bench  # noqa: E402

from memdex.doors.serve import client  # noqa: E402

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
    "Benchmarks of memdex serve."
    bench.words_only()


def _build(db_path: Path, corpus: Path, model: Path) -> None:
    memdex = bench.memdex_command()
    env = {**os.environ, client.NO_SERVER_ENV: "1"}
    bench.timed_process([*memdex, "--db", str(db_path), "index", "-q", str(corpus)], env=env)
    bench.timed_process([*memdex, "--db", str(db_path), "embed", "--model", str(model)], env=env)


@contextmanager
def _index(db_path: Path | None, corpus: Path, model: Path) -> Iterator[Path]:
    if db_path is not None:
        yield db_path.resolve()
        return
    with tempfile.TemporaryDirectory() as tmp:
        built = Path(tmp) / "serena.db"
        _build(built, corpus, model)
        yield built


@contextmanager
def _server(db_path: Path, *args: str, daemon: str = "serve") -> Iterator[dict]:
    """memdex serve --read-only (or ``daemon`` "watch": memdex watch, the service a user installs)
    on the index until the block ends; yields its state once warm."""
    log = open(f"{db_path}.bench-serve.log", "ab")  # noqa: SIM115 - closed below
    command = ["serve", "--read-only", *args] if daemon == "serve" else ["watch", *args]
    proc = subprocess.Popen([*bench.memdex_command(), "--db", str(db_path), *command], stderr=log)
    try:
        deadline = time.monotonic() + 120
        while True:
            state = client.ping(str(db_path))
            if state and state.get("warm"):
                break
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"memdex serve did not start: see {log.name}")
            time.sleep(0.1)
        state["proc"] = proc
        yield state
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(60)
        log.close()


def _cpu_seconds(pid: int) -> float:
    "User and system CPU of a running process so far, from /proc."
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@cli.command(name="cli")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@bench.SERENA_CORPUS
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=MODEL, show_default=True)
@click.option("--runs", default=21, show_default=True, help="Runs of each command, alternating.")
@click.option(
    "--daemon",
    type=click.Choice(["serve", "watch"]),
    default="serve",
    show_default=True,
    help="The resident process: memdex serve --read-only, or memdex watch (the installed service).",
)
def cli_searches(db_path: Path | None, corpus: Path, model: Path, runs: int, daemon: str) -> None:
    """`memdex search` start to exit, served and in-process, with meaning and words only,
    beside `python -c pass`.

    Example:

        python scripts/bench_serve.py cli --runs 21
    """
    memdex = bench.memdex_command()
    alone = {**os.environ, client.NO_SERVER_ENV: "1"}
    with _index(db_path, corpus, model) as index:
        samples: dict[str, list[bench.Sample]] = {}
        server_cpu: dict[str, float] = {"served meaning": 0.0, "served words": 0.0}
        with _server(index, daemon=daemon) as state:
            pid = state["proc"].pid
            for i in range(runs):
                query = QUERIES[i % len(QUERIES)]
                search = [*memdex, "--db", str(index), "search", query]
                runs_of = {
                    "python -c pass": ([sys.executable, "-c", "pass"], None),
                    "served meaning": (search, None),
                    "in-process meaning": (search, alone),
                    "served words": ([*search, "--no-semantic"], None),
                    "in-process words": ([*search, "--no-semantic"], alone),
                }
                for name, (args, env) in runs_of.items():
                    before = _cpu_seconds(pid)
                    samples.setdefault(name, []).append(bench.timed_process(args, env=env))
                    if name in server_cpu:
                        server_cpu[name] += _cpu_seconds(pid) - before
            served = client.ping(str(index)) or {}
        out: dict = {"corpus": bench.shown(db_path or corpus), "daemon": daemon, "runs": runs}
        out["warm"] = state.get("warm")
        out |= {name: bench.medians(s) for name, s in samples.items()}
        for name, total in server_cpu.items():
            out[name]["server_cpu_mean_s"] = round(total / runs, 4)
        floor = out["python -c pass"]["median_s"]
        out["target_s"] = round(2 * floor + 0.060, 4)
        out["served_meaning_within_target"] = out["served meaning"]["median_s"] <= out["target_s"]
        out["requests"] = served.get("requests")
        click.echo(json.dumps(out, indent=2))


@cli.command(name="http")
@click.option("--db", "db_path", type=click.Path(dir_okay=False, exists=True, path_type=Path))
@bench.SERENA_CORPUS
@click.option("--model", type=click.Path(file_okay=False, path_type=Path), default=MODEL, show_default=True)
@click.option("--clients", default=8, show_default=True, help="Concurrent clients.")
@click.option("--searches", default=500, show_default=True, help="Searches each client sends.")
def http_load(db_path: Path | None, corpus: Path, model: Path, clients: int, searches: int) -> None:
    """CLIENTS concurrent clients x SEARCHES searches over loopback: errors and latencies.

    Example:

        python scripts/bench_serve.py http --clients 8 --searches 500
    """
    with _index(db_path, corpus, model) as index, _server(index, "--http", "--port", "0") as state:
        url = urlsplit(state["http"])
        latencies: list[float] = []
        errors: list[str] = []
        lock = threading.Lock()

        def one_client(n: int) -> None:
            conn = http.client.HTTPConnection(str(url.hostname), url.port, timeout=60)
            mine, failed = [], []
            for i in range(searches):
                path = "/search?" + urlencode({"q": QUERIES[(n + i) % len(QUERIES)], "limit": 10})
                started = time.perf_counter()
                try:
                    conn.request("GET", path)
                    response = conn.getresponse()
                    body = response.read()
                    if response.status != 200 or "results" not in json.loads(body):
                        failed.append(f"{response.status}: {body[:200]!r}")
                except (OSError, http.client.HTTPException, ValueError) as exc:
                    failed.append(repr(exc))
                    conn.close()
                    conn = http.client.HTTPConnection(str(url.hostname), url.port, timeout=60)
                mine.append(time.perf_counter() - started)
            conn.close()
            with lock:
                latencies.extend(mine)
                errors.extend(failed)

        pid = state["proc"].pid
        cpu = _cpu_seconds(pid)
        started = time.perf_counter()
        threads = [threading.Thread(target=one_client, args=(n,)) for n in range(clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - started
        cpu = _cpu_seconds(pid) - cpu
        ms = sorted(x * 1000 for x in latencies)
        out = {
            "corpus": bench.shown(db_path or corpus),
            "clients": clients,
            "searches_each": searches,
            "requests": len(ms),
            "errors": len(errors),
            "first_errors": errors[:5],
            "seconds": round(wall, 2),
            "requests_per_s": round(len(ms) / wall, 1),
            "server_cpu_s": round(cpu, 2),
            "server_cpu_per_request_ms": round(cpu * 1000 / max(len(ms), 1), 2),
            "p50_ms": round(bench.percentile(ms, 50), 1),
            "p95_ms": round(bench.percentile(ms, 95), 1),
            "p99_ms": round(bench.percentile(ms, 99), 1),
            "max_ms": round(max(ms), 1),
            "mean_ms": round(statistics.mean(ms), 1),
        }
        click.echo(json.dumps(out, indent=2))


if __name__ == "__main__":
    cli()
