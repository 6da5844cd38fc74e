#!/usr/bin/env python3
"""Speed of memdex, measured side by side with ripgrep on the same files (JSON out).

Times are medians of repeated runs; this machine is shared and noisy, so ratios against
ripgrep, run in the same loop, say more than absolute figures.

Examples:

    python scripts/bench.py core                 # index ../shared/data/serena-memories, CLI search
    python scripts/bench.py core --runs 9 --corpus ../shared/data/serena-memories-flat
    python scripts/bench.py floors --runs 11     # memdex beside a bare FTS5 index and query
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import click

import memdex
from memdex.query.meaning import INDEX_ENV

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # scripts/synth.py, the corpus generator
DATA = (HERE.parent.parent / "shared" / "data").resolve()
QUERIES = [
    "disableAllHooks on Windows",
    "worktree isolation",
    "what did we decide about frontmatter migrations?",
    "rate limit graphql",
    "Chatty",
]
# The folder the meaning and serve benchmarks run on, unless --corpus names another.
SERENA_CORPUS = click.option(
    "--corpus",
    type=click.Path(file_okay=False, path_type=Path),
    default=DATA / "serena-memories",
    show_default=True,
)


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


def shown(path: Path) -> str:
    """A path as the JSON in docs/benchmarks records it: relative to the repository
    (``../shared/data/serena-memories``), never this machine's absolute path (#26)."""
    repo = HERE.parent
    full = path.resolve()
    if full.is_relative_to(repo.parent):
        return os.path.relpath(full, repo)
    return full.name


def words_only() -> None:
    """Measure words alone unless a run asks for meaning. Since issue 39 ``memdex index``,
    ``Index.index()`` and the watcher give what they write vectors with the packaged model,
    and a search uses them when they are there: a figure of words would wait on the model,
    or search by meaning unasked. Each benchmark and evaluation calls this first; what
    measures meaning embeds on purpose (``--model``; ``bench_meaning.py first-run`` clears it
    for the processes it times)."""
    os.environ.setdefault(INDEX_ENV, "0")


def run_quiet(args: list[str]) -> None:
    subprocess.run(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)


@click.group()
def cli() -> None:
    "Benchmarks of memdex (JSON on stdout)."
    words_only()


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
            with memdex.Index(db_path) as idx:
                idx.index(corpus)

        def rescan() -> None:
            with memdex.Index(db_path) as idx:
                idx.index(corpus)

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
        idx = memdex.Index(db_path)
        in_process = median_seconds(lambda: [idx.search(q) for q in QUERIES], runs)
        idx.close()
        db_bytes = sum(p.stat().st_size for p in Path(tmp).glob("bench.db*"))
    result = {
        "memdex": memdex.__version__,
        "corpus": shown(corpus),
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
        idx = memdex.Index(db_path)
        started = time.perf_counter()
        report = idx.index(folder)
        seconds = time.perf_counter() - started
        chunks = idx.status()["counts"]["chunks"]
        found = idx.search(f"zqplant{conversations // 2}").hits
        idx.close()
        click.echo(
            json.dumps(
                {
                    "memdex": memdex.__version__,
                    "conversations": conversations,
                    "files": len(files),
                    "documents": report["documents"],
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


def _found(idx: memdex.Index, token: str) -> int:
    return len(idx.search(token, limit=500, use_synonyms=False).hits)


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

    from memdex.store.lock import holder
    from memdex.watch.service import read_state

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        shutil.copytree(corpus, root)
        db_path = Path(tmp) / "watch.db"
        idx = memdex.Index(db_path)
        idx.index(root)

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
            latencies.append(_wait(lambda t=token: _found(idx, t) == 1, 30))
        burst_dir = root / "burst"
        burst_dir.mkdir()
        written = time.perf_counter()
        for i in range(burst):
            (burst_dir / f"b{i:04d}.md").write_text(f"# Burst {i}\n\nzqburstmarker item {i}\n")
        write_s = time.perf_counter() - written
        burst_s = _wait(lambda: _found(idx, "zqburstmarker") == burst, 60) + write_s
        proc.terminate()
        proc.wait(30)
        proc, startup = start()  # nothing changed while it was off
        catch_up = (read_state(db_path) or {}).get("catch_up", {})
        proc.terminate()
        proc.wait(30)
        idx.close()
    click.echo(
        json.dumps(
            {
                "memdex": memdex.__version__,
                "corpus": shown(corpus),
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


# -- a live agent session: a line appended to a 20 MB session log -> searchable -------------
def synthetic_session(path: Path, megabytes: float) -> int:
    """A Claude Code session log of about ``megabytes`` MB, built from a real one (its records
    repeated with fresh uuids, chained), so tool output, thinking and images are as real
    sessions have them. Returns the number of lines."""
    real = DATA / "chats" / "claude-code" / "daaain-claude-code-log" / "-experiments-worktrees"
    records = [
        json.loads(x) for x in (real / "ef958aa1-0e93-49f0-bb71-150f63befcd1.jsonl").read_text().splitlines()
    ]
    records = [r for r in records if r.get("type") in ("user", "assistant")]
    target = int(megabytes * 1024 * 1024)
    written, parent, n = 0, None, 0
    with path.open("w", encoding="utf-8") as f:
        while written < target:
            for record in records:
                n += 1
                record = {**record, "uuid": f"u{n}", "parentUuid": parent, "sessionId": "bench-session"}
                line = json.dumps(record) + "\n"
                f.write(line)
                written += len(line.encode())
                parent = f"u{n}"
    return n


def session_line(n: int, parent: str, token: str) -> str:
    record = {
        "type": "assistant",
        "uuid": f"live{n}",
        "parentUuid": parent,
        "sessionId": "bench-session",
        "timestamp": "2026-11-24T10:00:00Z",
        "message": {"role": "assistant", "content": [{"type": "text", "text": f"The answer is {token}."}]},
    }
    return json.dumps(record) + "\n"


@cli.command()
@click.option("--megabytes", default=20.0, show_default=True, help="Size of the session log.")
@click.option("--appends", default=15, show_default=True, help="Lines appended and timed.")
def session(megabytes: float, appends: int) -> None:
    """A live agent session: a line appended to a 20 MB Claude Code log, searchable when?

    Runs `memdex watch` as its own process and, after each appended line, `memdex search`
    as a process too, as a person would, until the line is found: the end-to-end latency.
    Beside it, in this process: reading the grown file on from where it stopped against
    reading it whole (the same work a file rewritten in place costs).

    Example:

        python scripts/bench.py session --megabytes 20 --appends 15
    """
    from memdex.store.lock import holder
    from memdex.watch.service import read_state

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "projects" / "-bench"
        root.mkdir(parents=True)
        log = root / "bench-session.jsonl"
        lines = synthetic_session(log, megabytes)
        db_path = Path(tmp) / "session.db"
        idx = memdex.Index(db_path)
        conn = idx.conn
        started = time.perf_counter()
        idx.index(root.parent)
        whole_s = time.perf_counter() - started
        proc = subprocess.Popen([*memdex_command(), "--db", str(db_path), "watch"], stderr=subprocess.DEVNULL)
        _wait(
            lambda: (
                (holder(db_path) or {}).get("pid") == proc.pid
                and (read_state(db_path) or {}).get("catch_up") is not None
            ),
            120,
        )
        parent = f"u{lines}"
        cli_latencies, found_in_process = [], []
        for i in range(appends):
            token = f"zqlive{i:03d}marker"
            appended = time.perf_counter()
            with log.open("a", encoding="utf-8") as f:
                f.write(session_line(i, parent, token))
            parent = f"live{i}"
            found_in_process.append(_wait(lambda t=token: _found(idx, t) == 1, 60))

            def cli_finds(t: str = token) -> bool:
                out = subprocess.run(
                    [*memdex_command(), "--db", str(db_path), "search", t, "--json"],
                    capture_output=True,
                    text=True,
                )
                return bool(json.loads(out.stdout or "{}").get("results"))

            _wait(cli_finds, 60)
            cli_latencies.append(time.perf_counter() - appended)
        proc.terminate()
        proc.wait(30)

        # the work itself, side by side: read on (one line) against read whole
        from memdex.ingest.pipeline import index_changes

        def append_and_index(n: int, parent: str) -> tuple[str, float]:
            "Append one line, bring the index up to date: the new parent, and how long it took."
            with log.open("a", encoding="utf-8") as f:
                f.write(session_line(n, parent, f"zqwork{n}"))
            started = time.perf_counter()
            index_changes(conn, [log])
            return f"live{n}", time.perf_counter() - started

        on, whole = [], []
        for i in range(5):
            parent, seconds = append_and_index(1000 + i, parent)
            on.append(seconds)
            conn.execute("DELETE FROM file_tails")  # no saved place: read whole
            conn.commit()
            parent, seconds = append_and_index(2000 + i, parent)
            whole.append(seconds)
        size = log.stat().st_size
        idx.close()
    click.echo(
        json.dumps(
            {
                "memdex": memdex.__version__,
                "session_bytes": size,
                "session_lines": lines,
                "first_index_s": round(whole_s, 3),
                "append_to_cli_search_finds_s": {
                    "p50": round(statistics.median(cli_latencies), 3),
                    "max": round(max(cli_latencies), 3),
                    "appends": appends,
                },
                "append_to_searchable_in_process_s": {
                    "p50": round(statistics.median(found_in_process), 3),
                    "max": round(max(found_in_process), 3),
                },
                "one_line_read_on_s": round(statistics.median(on), 4),
                "same_change_read_whole_s": round(statistics.median(whole), 4),
                "ratio_whole_to_read_on": round(statistics.median(whole) / statistics.median(on), 1),
                "goal": {"append_to_cli_search_finds_s": 1.5},
            },
            indent=2,
        )
    )


# -- start-up: a whole `memdex search` against the interpreter's own start ----------------------
@cli.command()
@click.option("--notes", default=2000, show_default=True, help="Generated notes to search.")
@click.option("--runs", default=21, show_default=True, help="Runs of each command, alternating.")
def startup(notes: int, runs: int) -> None:
    """`memdex search` end to end beside `python -c pass` in the same venv, alternating runs.

    Example:

        python scripts/bench.py startup --notes 2000
    """
    import synth

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "notes"
        synth.write_notes(folder, notes)
        db_path = Path(tmp) / "bench.db"
        run_quiet([*memdex_command(), "--db", str(db_path), "index", "-q", str(folder)])
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "python -c 'import click'": [sys.executable, "-c", "import click"],
            "memdex search": [
                *memdex_command(),
                "--db",
                str(db_path),
                "search",
                "deploy rollback",
                "--limit",
                "5",
            ],
        }
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        for _ in range(runs):
            for name, args in commands.items():
                samples[name].append(timed_process(args))
        out = {name: medians(s) for name, s in samples.items()}
        floor = out["python -c pass"]["median_s"]
        out["ratio_search_to_python"] = round(out["memdex search"]["median_s"] / floor, 2)
        click.echo(json.dumps({"notes": notes, **out}, indent=2))


# -- scale: generated corpora of growing size ------------------------------------------------
def memdex_command() -> list[str]:
    "The console script beside this Python, as a user runs it; else python -m memdex."
    script = Path(sys.executable).parent / "memdex"
    return [str(script)] if script.exists() else [sys.executable, "-m", "memdex"]


Sample = tuple[float, float, float]  # seconds from start to exit, peak memory in MB, CPU seconds


def timed_process(args: list[str], env: dict[str, str] | None = None) -> Sample:
    """Run a command quietly; (seconds from start to exit, peak resident memory in MB, CPU
    seconds: user and system, which another job on the machine inflates less than wall time)."""
    started = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    assert proc.stderr is not None
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime  # ru_maxrss: KiB on Linux


def medians(samples: list[Sample]) -> dict[str, float]:
    seconds = [s[0] for s in samples]
    return {
        "median_s": round(statistics.median(seconds), 4),
        "min_s": round(min(seconds), 4),
        "max_s": round(max(seconds), 4),
        "runs": len(samples),
        "peak_rss_mb": round(max(s[1] for s in samples), 1),
        "cpu_median_s": round(statistics.median(s[2] for s in samples), 4),
    }


def rg_pattern(query: str) -> str:
    "The words of a query as a ripgrep alternation, stopwords left out, as a grep user would."
    from memdex.tokens import STOPWORDS

    words = [w for w in re.findall(r"\w+", query.lower()) if w not in STOPWORDS and len(w) > 2]
    return "|".join(words) or query


def _touch(files: list[Path], marker: str) -> dict[Path, tuple[bytes, int]]:
    "Append a line to each file; return what restores them (bytes, mtime_ns)."
    saved = {}
    for i, f in enumerate(files):
        saved[f] = (f.read_bytes(), f.stat().st_mtime_ns)
        with open(f, "a", encoding="utf-8") as out:
            out.write(f"\n{marker}{i}\n")
    return saved


def _restore(saved: dict[Path, tuple[bytes, int]]) -> None:
    for f, (data, mtime) in saved.items():
        f.write_bytes(data)
        os.utime(f, ns=(mtime, mtime))


def scale_one(size: int, work: Path, runs: int, cli_queries: int) -> dict:
    import synth

    corpus = work / f"notes-{size}"
    if not (corpus / ".complete").exists():  # generated once, reused by later runs
        shutil.rmtree(corpus, ignore_errors=True)
        synth.write_notes(corpus, size)
        (corpus / ".complete").write_text("")
    files = sorted(corpus.rglob("*.md"))
    db_path = work / f"scale-{size}.db"
    memdex_cmd = memdex_command()
    index_cmd = [*memdex_cmd, "--db", str(db_path), "index", "-q", str(corpus)]
    big = size > 20_000

    def full() -> tuple[float, float]:
        for p in work.glob(f"scale-{size}.db*"):
            p.unlink()
        return timed_process(index_cmd)

    full_runs = [full() for _ in range(1 if big else runs)]
    rescan = [timed_process(index_cmd) for _ in range(runs)]
    changed: dict[str, dict] = {}
    rng = __import__("random").Random(size)
    for count in (1, min(200, len(files))):
        samples = []
        for r in range(runs):
            saved = _touch(rng.sample(files, count), f"zqchanged{count}x{r}x")
            try:
                samples.append(timed_process(index_cmd))
            finally:
                _restore(saved)
        changed[str(count)] = medians(samples)
    timed_process(index_cmd)  # back to the generated corpus, as restored
    db_bytes = sum(p.stat().st_size for p in work.glob(f"scale-{size}.db*"))

    rg = shutil.which("rg")
    queries = synth.queries(size)
    cli_rows = []
    for q in queries[:cli_queries]:
        row: dict = {"query": q["query"], "shape": q["shape"]}
        row["memdex_cli"] = medians(
            [timed_process([*memdex_cmd, "--db", str(db_path), "search", q["query"]]) for _ in range(runs)]
        )
        if rg:
            args = [rg, "-l", "-i", "-e", rg_pattern(q["query"]), str(corpus)]
            row["ripgrep"] = medians([timed_process(args) for _ in range(runs)])
            listed = subprocess.run(args, capture_output=True, text=True).stdout.count("\n")
            row["ripgrep_files_listed"] = listed
        cli_rows.append(row)

    idx = memdex.Index(db_path)
    cascade: dict[str, list[float]] = {"all": []}
    layers: dict[str, list[float]] = {}
    planted_found = 0
    for _ in range(runs):
        for q in queries:
            started = time.perf_counter()
            result = idx.search(q["query"])
            ms = (time.perf_counter() - started) * 1000
            cascade["all"].append(ms)
            cascade.setdefault(q["shape"], []).append(ms)
            for run in result.layers:
                layers.setdefault(f"{run.layer} {run.name} ({run.mode})", []).append(run.ms)
            if q["shape"] == "planted":
                planted_found += int(any(q["query"] in h.title for h in result.hits[:1]))
    idx.close()

    def pcts(values: list[float]) -> dict[str, float]:
        return {
            "p50_ms": round(percentile(values, 50), 2),
            "p95_ms": round(percentile(values, 95), 2),
            "n": len(values),
        }

    cli_median = statistics.median(r["memdex_cli"]["median_s"] for r in cli_rows)
    out = {
        "notes": size,
        "corpus_bytes": sum(f.stat().st_size for f in files),
        "full_index": medians(full_runs),
        "unchanged_rescan": medians(rescan),
        "changed_files": changed,
        "database_bytes": db_bytes,
        "cli_search": cli_rows,
        "cli_search_median_s": round(cli_median, 4),
        "in_process_cascade": {shape: pcts(v) for shape, v in cascade.items()},
        "in_process_layers": {name: pcts(v) for name, v in sorted(layers.items())},
        "planted_found_first": f"{planted_found}/{runs * 10}",
    }
    if rg:
        rg_median = statistics.median(r["ripgrep"]["median_s"] for r in cli_rows)
        out["ripgrep_median_s"] = round(rg_median, 4)
        out["ratio_memdex_cli_to_ripgrep"] = round(cli_median / rg_median, 2)
        out["ripgrep_files_listed_median"] = statistics.median(r["ripgrep_files_listed"] for r in cli_rows)
    return out


@cli.command()
@click.option("--sizes", default="2000,20000,100000", show_default=True, help="Corpus sizes, comma-separated")
@click.option("--runs", default=5, show_default=True, help="Repetitions (full index above 20,000: once)")
@click.option("--cli-queries", default=12, show_default=True, help="Queries timed through the CLI (of 40).")
@click.option(
    "--work",
    type=click.Path(file_okay=False, path_type=Path),
    help="Keep generated corpora and indexes here (reused by later runs).",
)
def scale(sizes: str, runs: int, cli_queries: int, work: Path | None) -> None:
    """Generated MIF notes at growing sizes: index, re-scan, changes, search, size, memory.

    For each size: full index, unchanged re-scan, 1 and 200 changed files (each `memdex index`
    as a process: wall time and peak memory), CLI search from process start to exit beside
    ripgrep listing the files with the same words, and in-process p50/p95 of the cascade and
    of each layer on 40 queries (scripts/synth.py `queries`).

    Example:

        python scripts/bench.py scale --sizes 2000,20000 --runs 3 > docs/benchmarks/scale.json
    """
    counts = [int(s.replace("_", "")) for s in sizes.split(",") if s.strip()]
    with tempfile.TemporaryDirectory() as tmp:
        folder = work or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        results = []
        for size in counts:
            click.echo(f"scale: {size:,} notes", err=True)
            results.append(scale_one(size, folder, runs, cli_queries))
    click.echo(
        json.dumps(
            {
                "memdex": memdex.__version__,
                "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
                "ripgrep": shutil.which("rg") is not None,
                "sizes": results,
                "goals": {
                    "index_2000_s": 1.5,
                    "rescan_2000_s": 0.3,
                    "cli_search_s": 0.15,
                    "index_100000_s": 45,
                    "cascade_p95_100000_ms": 40,
                },
            },
            indent=2,
        )
    )


# -- floors: the least the same work could cost, measured beside memdex --------------------------
# The index floor: read each note, parse its frontmatter with libyaml, insert title and body
# into one plain FTS5 table, all in one transaction. Nothing memdex does (chunks, topics, three
# full-text indexes, change tracking) is in it: it is the cost of reading and indexing the words.
FLOOR_INDEX = r"""
import os, sqlite3, sys, yaml
root, db = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(db)
conn.execute("CREATE VIRTUAL TABLE notes USING fts5(path UNINDEXED, title, body)")
with conn:
    for folder, _, names in os.walk(root):
        for name in names:
            if not name.endswith(".md"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                text = f.read()
            meta, body = {}, text
            if text.startswith("---\n"):
                end = text.find("\n---\n", 3)
                if end > 0:
                    meta = yaml.load(text[4:end], Loader=yaml.CSafeLoader) or {}
                    body = text[end + 5:]
            title = meta.get("title", "") if isinstance(meta, dict) else ""
            conn.execute("INSERT INTO notes VALUES (?, ?, ?)", (path, str(title), body))
conn.close()
"""
# The query floor: one plain FTS5 query per question, its words ORed, best 10 by bm25, printed
# as JSON lines, all questions in one process (as `memdex search --batch` runs them).
FLOOR_QUERY = r"""
import json, re, sqlite3, sys
conn = sqlite3.connect(sys.argv[1])
word = re.compile(r"[^\W_]+")
for line in open(sys.argv[2], encoding="utf-8"):
    item = json.loads(line)
    match = " OR ".join('"%s"' % w for w in word.findall(item["query"].lower())) or '""'
    rows = conn.execute(
        "SELECT path, title FROM notes WHERE notes MATCH ? ORDER BY bm25(notes) LIMIT ?",
        (match, item["limit"]),
    ).fetchall()
    print(json.dumps({"id": item["id"], "results": [{"path": p, "title": t} for p, t in rows]}))
"""


Contender = tuple[Callable[[], None], list[str], dict[str, str] | None]  # setup, command, environment


def _alternate(contenders: dict[str, Contender], runs: int) -> dict:
    "Run each contender once per round, in turn (setup untimed); medians per contender."
    samples: dict[str, list[Sample]] = {name: [] for name in contenders}
    for _ in range(runs):
        for name, (setup, args, env) in contenders.items():
            setup()
            samples[name].append(timed_process(args, env))
    return {name: medians(s) for name, s in samples.items()}


def _clear(db_path: Path) -> Callable[[], None]:
    def clear() -> None:
        for p in db_path.parent.glob(db_path.name + "*"):
            p.unlink()

    return clear


def _ratios(out: dict, floor: str) -> dict[str, float]:
    "Each contender's median wall and CPU time over the floor's."
    base = out[floor]
    return {name: round(v["median_s"] / base["median_s"], 2) for name, v in out.items() if name != floor} | {
        f"{name} (cpu)": round(v["cpu_median_s"] / base["cpu_median_s"], 2)
        for name, v in out.items()
        if name != floor
    }


def _table_bytes(db_path: Path) -> dict[str, int]:
    "Bytes of each table with its indexes; an FTS5 table's shadow tables count as the table."
    conn = sqlite3.connect(db_path)
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
    owner = {}
    for row in conn.execute("SELECT name, tbl_name FROM sqlite_master WHERE type IN ('table', 'index')"):
        name, table = row
        base, _, suffix = name.rpartition("_")
        owner[name] = base if suffix in FTS_SHADOWS and base in tables else table
    sizes: dict[str, int] = {}
    for name, size in conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name"):
        key = owner.get(name, "(schema and free pages)")
        sizes[key] = sizes.get(key, 0) + size
    conn.close()
    return dict(sorted(sizes.items(), key=lambda kv: -kv[1]))


FTS_SHADOWS = {"data", "idx", "docsize", "config", "content"}


def qmd_index(corpus: Path, home: Path) -> Contender | None:
    "qmd, where it is installed: a fresh collection of the same notes under its own cache."
    qmd = shutil.which("qmd")
    if qmd is None:
        return None
    env = {**os.environ, "XDG_CACHE_HOME": str(home), "HOME": str(home)}
    return (
        lambda: shutil.rmtree(home, ignore_errors=True),
        [qmd, "collection", "add", str(corpus), "--name", "bench", "--mask", "**/*.md"],
        env,
    )


@cli.command()
@click.option("--notes", default=2000, show_default=True, help="Generated memories to index.")
@click.option("--questions", default=300, show_default=True, help="SciFact test claims to search for.")
@click.option(
    "--runs", default=11, show_default=True, help="Rounds; each runs every contender once, in turn."
)
def floors(notes: int, questions: int, runs: int) -> None:
    """memdex beside the floors: the least indexing the same notes and answering the same
    questions could cost (a bare FTS5 insert; one plain FTS5 query each), and qmd where it is
    installed. Every figure is also given as a ratio to its floor.

    Index: `memdex index` of generated mnemonic-style memories (scripts/synth.py memories), each
    contender a fresh process on a fresh database. Questions: `memdex search --batch` of SciFact
    test claims (odd ids, as scripts/eval.py splits them), 10 results each. Database size per note
    beside the floor's, and what each table of it takes.

    Example:

        python scripts/bench.py floors --runs 11 > docs/benchmarks/floors.json
    """
    import synth
    from eval import scifact_notes, scifact_queries

    memdex_cmd = memdex_command()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        corpus = work / "memories"
        corpus_bytes = sum(f.stat().st_size for f in synth.write_memories(corpus, notes))
        floor_db, memdex_db = work / "floor.db", work / "memdex.db"
        contenders: dict[str, Contender] = {
            "floor": (
                _clear(floor_db),
                [sys.executable, "-c", FLOOR_INDEX, str(corpus), str(floor_db)],
                None,
            ),
            "memdex index": (
                _clear(memdex_db),
                [*memdex_cmd, "--db", str(memdex_db), "index", "-q", str(corpus)],
                None,
            ),
        }
        qmd = qmd_index(corpus, work / "qmd")
        if qmd is not None:
            contenders["qmd collection add"] = qmd
        index = _alternate(contenders, runs)
        sizes = {
            name: sum(p.stat().st_size for p in work.glob(db.name + "*"))
            for name, db in (("floor", floor_db), ("memdex", memdex_db))
        }
        tables = _table_bytes(memdex_db)

        # Questions: SciFact abstracts as notes, indexed once by each; the claims of the test half.
        sci = work / "scifact"
        documents = len(scifact_notes(sci))
        sci_floor, sci_memdex = work / "scifact-floor.db", work / "scifact-memdex.db"
        timed_process([sys.executable, "-c", FLOOR_INDEX, str(sci), str(sci_floor)])
        timed_process([*memdex_cmd, "--db", str(sci_memdex), "index", "-q", str(sci)])
        claims = [q for q in scifact_queries() if int(q["id"]) % 2 == 1][:questions]
        batch = work / "questions.jsonl"
        batch.write_text(
            "".join(json.dumps({"id": q["id"], "query": q["query"], "limit": 10}) + "\n" for q in claims),
            "utf-8",
        )
        search = _alternate(
            {
                "floor": (
                    lambda: None,
                    [sys.executable, "-c", FLOOR_QUERY, str(sci_floor), str(batch)],
                    None,
                ),
                "memdex search --batch": (
                    lambda: None,
                    [*memdex_cmd, "--db", str(sci_memdex), "search", "--batch", str(batch)],
                    None,
                ),
            },
            runs,
        )
    click.echo(
        json.dumps(
            {
                "memdex": memdex.__version__,
                "machine": {"cpus": os.cpu_count(), "python": sys.version.split()[0]},
                "qmd": shutil.which("qmd") is not None,
                "index": {
                    "notes": notes,
                    "corpus_bytes": corpus_bytes,
                    **index,
                    "ratio_to_floor": _ratios(index, "floor"),
                },
                "questions": {
                    "questions": len(claims),
                    "documents": documents,
                    **search,
                    "ratio_to_floor": _ratios(search, "floor"),
                },
                "database": {
                    "floor_bytes_per_note": round(sizes["floor"] / notes),
                    "memdex_bytes_per_note": round(sizes["memdex"] / notes),
                    "ratio_to_floor": round(sizes["memdex"] / sizes["floor"], 2),
                    "memdex_bytes_per_note_by_table": {k: round(v / notes) for k, v in tables.items()},
                },
                "goals": {"index_ratio": 2.0, "questions_ratio": 1.5},
            },
            indent=2,
        )
    )


# -- report: docs/benchmarks.md and its plots from the saved JSON ----------------------------
RESULTS = HERE.parent / "docs" / "benchmarks"
COMMANDS = {
    "scale": "python scripts/bench.py scale > docs/benchmarks/scale.json",
    "floors": "python scripts/bench.py floors > docs/benchmarks/floors.json",
    "core": "python scripts/bench.py core > docs/benchmarks/core.json",
    "watch": "python scripts/bench.py watch > docs/benchmarks/watch.json",
    "chats": "python scripts/bench.py chats > docs/benchmarks/chats.json",
    "eval": "python scripts/eval.py --model ../shared/data/models/all-MiniLM-L6-v2"
    " > docs/benchmarks/eval.json",
    "startup": "python scripts/bench.py startup > docs/benchmarks/startup.json",
    "session": "python scripts/bench.py session > docs/benchmarks/session.json",
    "meaning_encoder": "python scripts/bench_meaning.py encoder > docs/benchmarks/meaning_encoder.json",
    "meaning_corpus": "python scripts/bench_meaning.py corpus > docs/benchmarks/meaning_corpus.json",
    "meaning_scale": "python scripts/bench_meaning.py scale > docs/benchmarks/meaning_scale.json",
    "meaning_eval": "python scripts/eval.py --model ../shared/data/models/all-MiniLM-L6-v2 --split S"
    " > docs/benchmarks/meaning_eval.json",
    "serve_cli": "python scripts/bench_serve.py cli > docs/benchmarks/serve_cli.json",
    "serve_http": "python scripts/bench_serve.py http > docs/benchmarks/serve_http.json",
}


def _load(results: Path, name: str) -> dict | None:
    path = results / f"{name}.json"
    return json.loads(path.read_text("utf-8")) if path.exists() else None


def _plot(path: Path, title: str, ylabel: str, notes: list[int], series: list[tuple[str, str, list]]) -> None:
    "One log-log chart against corpus size: (style, label, values) per line."
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=110)
    for style, label, values in series:
        ax.plot(notes, values, style, label=label)
    ax.set(xscale="log", yscale="log", xlabel="notes", ylabel=ylabel)
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)


def _plots(scale_results: dict, out: Path) -> list[str]:
    sizes = scale_results["sizes"]
    notes = [s["notes"] for s in sizes]
    ripgrep = all("ripgrep_median_s" in s for s in sizes)
    rg_s = [s.get("ripgrep_median_s", 0.0) for s in sizes]
    index_series = [
        ("o-", "memdex index, from scratch", [s["full_index"]["median_s"] for s in sizes]),
        ("s-", "memdex index, 200 changed", [s["changed_files"]["200"]["median_s"] for s in sizes]),
        ("^-", "memdex index, nothing changed", [s["unchanged_rescan"]["median_s"] for s in sizes]),
    ]
    query_series = [
        ("o-", "memdex search, CLI end to end (median)", [s["cli_search_median_s"] * 1000 for s in sizes]),
        ("s-", "cascade in process, p95", [s["in_process_cascade"]["all"]["p95_ms"] for s in sizes]),
        ("^-", "cascade in process, p50", [s["in_process_cascade"]["all"]["p50_ms"] for s in sizes]),
    ]
    if ripgrep:
        index_series.append(("x--", "ripgrep, one search (no index)", rg_s))
        query_series.append(("x--", "ripgrep -l, CLI (median)", [t * 1000 for t in rg_s]))
    _plot(
        out / "bench-index-time.png",
        "Index time against corpus size",
        "seconds (median, process start to exit)",
        notes,
        index_series,
    )
    _plot(
        out / "bench-query-latency.png",
        "Query latency against corpus size",
        "milliseconds",
        notes,
        query_series,
    )
    return ["bench-index-time.png", "bench-query-latency.png"]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    "A markdown table, the first column left-aligned and the others right, then a blank line."
    return [
        "| " + " | ".join(header) + " |",
        "|---|" + "---:|" * (len(header) - 1),
        *("| " + " | ".join(row) + " |" for row in rows),
        "",
    ]


def _scale_section(data: dict) -> list[str]:
    lines = [
        "## Scale: generated notes, 2,000 to 100,000",
        "",
        f"`{COMMANDS['scale']}`",
        "",
        "MIF notes from `scripts/synth.py` (Zipf-distributed words, a planted `zqplant<N>` term in",
        "each title). Every `memdex index` and `memdex search` is a process,",
        "timed from start to exit, with its peak memory (`ru_maxrss`). Medians; the full index of",
        "more than 20,000 notes runs once.",
        "",
    ]
    sizes = data["sizes"]
    lines += _table(
        [
            "notes",
            "full index",
            "nothing changed",
            "1 changed",
            "200 changed",
            "database",
            "index peak memory",
        ],
        [
            [f"{s['notes']:,}"]
            + [f"{t['median_s']:.2f} s" for t in (s["full_index"], s["unchanged_rescan"])]
            + [f"{s['changed_files'][n]['median_s']:.2f} s" for n in ("1", "200")]
            + [f"{s['database_bytes'] / 1e6:.0f} MB", f"{s['full_index']['peak_rss_mb']:.0f} MB"]
            for s in sizes
        ],
    )
    rows = []
    for s in sizes:
        casc, rg = s["in_process_cascade"]["all"], s.get("ripgrep_median_s")
        rows.append(
            [
                f"{s['notes']:,}",
                f"{s['cli_search_median_s'] * 1000:.0f} ms",
                f"{rg * 1000:.0f} ms" if rg else "n/a",
                f"{s['ratio_memdex_cli_to_ripgrep']}x" if rg else "n/a",
                f"{round(s['ripgrep_files_listed_median'])}" if rg else "n/a",
                f"{casc['p50_ms']:.1f} ms",
                f"{casc['p95_ms']:.1f} ms",
                s["planted_found_first"],
            ]
        )
    lines += _table(
        [
            "notes",
            "CLI search (median)",
            "ripgrep -l (median)",
            "memdex / ripgrep",
            "files ripgrep lists",
            "cascade p50",
            "cascade p95",
            "planted term first",
        ],
        rows,
    )
    biggest = sizes[-1]
    cascade = biggest["in_process_cascade"]
    lines += [
        f"In-process p50 / p95 by query shape and by layer at {biggest['notes']:,} notes "
        "(each layer's SQL, as `--json` reports it in `layers[].ms`):",
        "",
    ]
    lines += _table(
        ["", "p50", "p95", "runs"],
        [
            [f"cascade, {name} queries" if name in cascade else f"layer {name}"]
            + [f"{v['p50_ms']:.2f} ms", f"{v['p95_ms']:.2f} ms", str(v["n"])]
            for name, v in [*cascade.items(), *biggest["in_process_layers"].items()]
        ],
    )
    lines += ["![Index time](bench-index-time.png)", "", "![Query latency](bench-query-latency.png)", ""]
    return lines


def _floors_section(data: dict) -> list[str]:
    index, questions, size = data["index"], data["questions"], data["database"]
    lines = [
        "## Floors: memdex beside the least the same work costs",
        "",
        f"`{COMMANDS['floors']}`",
        "",
        "The index floor reads each note, parses its frontmatter with libyaml and inserts title",
        "and body into one plain FTS5 table, in one transaction. The query floor runs one plain",
        "FTS5 query per question (its words ORed, best 10 by bm25), all in one process. Each",
        "contender is a process timed from start to exit; runs alternate, figures are medians",
        "(CPU is user + system time, which another job on the machine inflates less).",
        "qmd runs in the same loop, in turn with them, where it is installed"
        + ("." if data.get("qmd") else "; it was not installed on the machine that measured these."),
        "",
    ]
    rows = []
    for title, part, names in (
        (
            f"index {index['notes']:,} generated memories ({index['corpus_bytes'] / 1e6:.1f} MB)",
            index,
            ["memdex index", "qmd collection add"],
        ),
        (
            f"{questions['questions']} SciFact test claims over {questions['documents']:,} abstracts",
            questions,
            ["memdex search --batch"],
        ),
    ):
        for name in names:
            if name not in part:
                continue
            ratio = part["ratio_to_floor"]
            rows.append(
                [
                    f"{title}: {name}",
                    f"{part['floor']['median_s']:.2f} s",
                    f"{part[name]['median_s']:.2f} s",
                    f"{ratio[name]:.2f}x",
                    f"{ratio[name + ' (cpu)']:.2f}x",
                ]
            )
    lines += _table(["", "floor", "it", "it / floor", "its CPU / floor's CPU"], rows)
    lines += [
        f"Database per note: memdex {size['memdex_bytes_per_note']:,} bytes, the floor "
        f"{size['floor_bytes_per_note']:,} ({size['ratio_to_floor']}x). What memdex keeps, per note:",
        "",
    ]
    lines += _table(
        ["table (with its indexes)", "bytes per note"],
        [[name, f"{n:,}"] for name, n in size["memdex_bytes_per_note_by_table"].items() if n >= 8],
    )
    lines += [
        "What the bytes buy: `documents` holds each memory's fields and its whole frontmatter",
        "as JSON (`meta`, for filters and `--json`); `chunks` the text cut at headings, with line",
        "numbers; `files` the path, size, mtime and hash that let a re-scan cost one `stat` per",
        "unchanged file; `topics` the tags, aliases and keywords layer 1 matches; the three",
        "full-text indexes (`chunks_fts`, `bodies_fts`, `documents_fts`) are what a search reads.",
        "The floor keeps one index of title and body, and nothing to re-scan or filter by.",
        "",
    ]
    return lines


_LABELS = {"memdex_meaning": "memdex, with meaning"}


def _named(section: dict, *names: str) -> list[tuple[str, dict]]:
    "The rankers of a set that ran (meaning only with --model), each with its label."
    return [(_LABELS.get(n, n), section[n]) for n in names if n in section]


def _eval_section(data: dict) -> list[str]:
    lines = [
        "## Ranking quality",
        "",
        f"`{COMMANDS['eval']}`",
        "(words alone are `memdex`, fused with meaning `memdex_meaning`)",
        "",
    ]
    sci = data.get("scifact_train")
    if sci:
        lines += [
            f"SciFact, train split ({sci['queries']} claims, {sci['documents']:,} abstracts as notes):",
            "",
        ]
        lines += _table(
            ["", "nDCG@10", "recall@100", "ms per query"],
            [
                [name, f"{v['ndcg@10']:.3f}", f"{v['recall@100']:.3f}", f"{v['ms_per_query']:.1f}"]
                for name, v in _named(sci, "memdex", "memdex_meaning", "fts5_baseline")
            ],
        )
    ser = data.get("serena")
    if ser:
        lines += [
            f"Serena memories ({ser['queries']} queries of `scripts/eval_data/serena-queries.jsonl`; "
            "tuned on dev, test held out):",
            "",
        ]
        lines += _table(
            ["", "recall@10", "MRR", "test recall@10", "dev recall@10", "paraphrase recall@10"],
            [
                [name, f"{v['recall@10']:.3f}", f"{v['mrr']:.3f}"]
                + [f"{v[part]['recall@10']:.3f}" for part in ("test", "dev", "paraphrase")]
                for name, v in _named(ser, "memdex", "memdex_meaning", "fts5_baseline", "word_count_baseline")
            ],
        )
    chats = data.get("chats")
    if chats:
        lines += [
            f"Chats ({chats['questions']} questions): gold turns inside a "
            f"{chats['budget_tokens']:,}-token answer:",
            "",
        ]
        lines += _table(
            ["", "all", "dev", "test"],
            [
                [name] + [f"{v[k]:.3f}" for k in ("gold_in_budget", "dev", "test")]
                for name, v in _named(chats, "memdex", "memdex_meaning", "fts5_8_turn_baseline")
            ],
        )
    locomo = data.get("locomo")
    if locomo:
        lines += [
            f"LoCoMo, development half ({locomo['questions']} questions over five long conversations "
            f"nobody here wrote): share of gold turns whole inside {locomo['budget_tokens']:,} tokens, "
            f"{locomo['limit']} results:",
            "",
        ]
        parts = ("gold_in_budget", "dev", "test", "single_hop", "multi_hop", "temporal", "open_domain")
        lines += _table(
            ["", "all", "dev", "test", "single-hop", "multi-hop", "temporal", "open-domain"],
            [
                [name] + [f"{v[k]:.3f}" for k in parts]
                for name, v in _named(locomo, "memdex", "memdex_meaning", "fts5_8_turn_baseline")
            ],
        )
    lme = data.get("longmemeval")
    if lme:
        lines += _longmemeval_tables(lme)
    return lines


def _longmemeval_tables(lme: dict) -> list[str]:
    lines = [
        f"LongMemEval_S, development part ({lme['questions']} questions, each its own haystack of "
        "38-62 sessions indexed into its own database and searched on the day it is asked, as "
        "`../shared/data/longmemeval-dev/README.md` scores it). Evidence: the share of a question's "
        f"evidence turns whole inside {lme['budget_tokens']:,} tokens at chunk granularity, "
        f"{lme['limit']} results; all@5: every answer session among the first 5 conversations; "
        "NDCG@10 over conversations:",
        "",
    ]

    def cell(v: dict, key: str) -> str:
        return f"{v[key]:.3f}" if key in v else ""

    lines += _table(
        ["", "evidence", "all@5", "NDCG@10", "dev evidence", "test evidence"],
        [
            [name, cell(v, "evidence"), cell(v, "all@5"), cell(v, "ndcg@10")]
            + [cell(v[part], "evidence") for part in ("dev", "test")]
            for name, v in _named(lme, "memdex", "memdex_meaning", "fts5_8_turn_baseline")
        ],
    )
    rankers = _named(lme, "memdex", "memdex_meaning")
    types = [
        t
        for t, v in rankers[0][1].items()
        if isinstance(v, dict) and "evidence" in v and t not in ("dev", "test")
    ]
    lines += ["By question type, evidence (all@5):", ""]
    lines += _table(
        ["type", *(name for name, _ in rankers)],
        [[t] + [f"{v[t]['evidence']:.3f} ({v[t]['all@5']:.3f})" for _, v in rankers] for t in types],
    )
    latest = [(name, v["latest first"]) for name, v in rankers if "latest first" in v]
    if latest:
        lines += [
            "Latest first: of the knowledge-update questions whose passages show two answer "
            "conversations (an older and a newer statement of a fact), the share where the newer "
            "comes first: "
            + "; ".join(f"{name} {v['share']:.3f} of {v['questions']}" for name, v in latest)
            + ".",
            "",
        ]
    lines += [
        "The baseline's runs of 8 turns rarely fit the budget here: an assistant's turns are long,",
        "so a run of them is often over 2,000 tokens on its own (LoCoMo's short turns fit).",
        "",
    ]
    return lines


def _json_section(title: str, name: str, data: dict, keys: list[str]) -> list[str]:
    lines = [f"## {title}", "", f"`{COMMANDS[name]}`", "", "```json"]
    lines.append(json.dumps({k: data[k] for k in keys if k in data}, indent=2))
    return [*lines, "```", ""]


@cli.command()
@click.option(
    "--results",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=RESULTS,
    help="Folder of the JSON results  [default: docs/benchmarks]",
)
def report(results: Path) -> None:
    """Write benchmarks.md and its plots beside the folder of JSON results (docs/).

    Run the commands it lists first; a missing result is left out.

    Example:

        python scripts/bench.py report
    """
    lines = [
        "# Benchmarks",
        "",
        "Written by `python scripts/bench.py report` from the JSON files in `docs/benchmarks/`;",
        "each section names the command that made its figures. The machine is shared and noisy:",
        "figures are medians, and ripgrep runs in the same loop on the same files for a ratio.",
        "Absolute figures move with the machine: those checked in for issue 16 were taken on one",
        "where the code before it indexed 2,000 notes in 4.05 s, against the 1.04 s checked in",
        "before. Compare within a run: the floors section puts memdex beside a bare FTS5 index",
        "and query in the same loop, and the notes at the end give the code before and after",
        "issue 16 side by side on the same machine.",
        "",
    ]
    scale_data = _load(results, "scale")
    if scale_data:
        m = scale_data["machine"]
        lines += [f"memdex {scale_data['memdex']}, Python {m['python']}, {m['cpus']} CPUs.", ""]
        _plots(scale_data, results.parent)
        lines += _scale_section(scale_data)
    floors_data = _load(results, "floors")
    if floors_data:
        lines += _floors_section(floors_data)
    eval_data = _load(results, "eval")
    if eval_data:
        lines += _eval_section(eval_data)
    for title, name, keys in (
        (
            "Real memories: the Serena corpus",
            "core",
            [
                "markdown_files",
                "full_index",
                "unchanged_rescan",
                "cli_search_median_s",
                "in_process_search_median_ms",
                "database_bytes",
            ],
        ),
        ("The watcher", "watch", ["files", "edit_to_searchable_s", "burst", "catch_up_nothing_changed"]),
        (
            "A live agent session: a line appended to a 20 MB Claude Code log",
            "session",
            [
                "session_bytes",
                "session_lines",
                "first_index_s",
                "append_to_cli_search_finds_s",
                "append_to_searchable_in_process_s",
                "one_line_read_on_s",
                "same_change_read_whole_s",
                "ratio_whole_to_read_on",
            ],
        ),
        (
            "Start-up: `memdex search` beside `python -c pass`",
            "startup",
            [
                "notes",
                "python -c pass",
                "python -c 'import click'",
                "memdex search",
                "ratio_search_to_python",
            ],
        ),
        (
            "Meaning: embedding the Serena corpus and searching it",
            "meaning_corpus",
            [
                "chunks",
                "index_s",
                "embed_s",
                "embed_chunks_per_s",
                "embed_peak_rss_mb",
                "vector_bytes_per_1000_chunks",
                "search",
            ],
        ),
        (
            "Meaning: ranking quality, words alone, fused, and meaning alone",
            "meaning_eval",
            ["serena", "scifact_dev", "scifact_test", "chats"],
        ),
        (
            "Chat exports",
            "chats",
            [
                "conversations",
                "files",
                "chunks",
                "index_seconds",
                "conversations_per_second",
                "database_bytes",
            ],
        ),
        (
            "memdex serve: `memdex search` answered by the server, beside in-process and `python -c pass`",
            "serve_cli",
            [
                "corpus",
                "index",
                "runs",
                "python -c pass",
                "served meaning",
                "in-process meaning",
                "served words",
                "in-process words",
                "target_s",
                "served_meaning_within_target",
                "warm",
            ],
        ),
        (
            "memdex serve: concurrent HTTP clients",
            "serve_http",
            [
                "corpus",
                "clients",
                "searches_each",
                "requests",
                "errors",
                "seconds",
                "requests_per_s",
                "server_cpu_per_request_ms",
                "p50_ms",
                "p95_ms",
                "p99_ms",
                "max_ms",
            ],
        ),
    ):
        data = _load(results, name)
        if data:
            lines += _json_section(title, name, data, keys)
    notes = results / "notes.md"  # hand-written: what was tried, and why it stayed or went
    if notes.exists():
        lines += ["", notes.read_text("utf-8").strip(), ""]
    out = results.parent / "benchmarks.md"
    page = "\n".join(lines).rstrip() + "\n"
    if out.exists():
        page, dropped = keep_written_in_place(out.read_text("utf-8"), page)
        for title in dropped:
            click.echo(
                f"dropped “{title}”: the report no longer writes it (mark it {BY_HAND} to keep it)", err=True
            )
    out.write_text(page, "utf-8")
    click.echo(f"wrote {out}", err=True)


# The line that marks a section of benchmarks.md as written by hand (a measurement made once,
# such as a model's first run): the report keeps it where it stands.
BY_HAND = "<!-- written by hand: bench.py report keeps this section -->"


def keep_written_in_place(before: str, written: str) -> tuple[str, list[str]]:
    """``written`` (the report) with the sections of ``before`` (the page as it was) that are
    marked BY_HAND, each after the section it followed; and the titles of the sections of
    ``before`` that are neither written nor marked (dropped)."""
    ours = {title for title, _ in _sections(written)}
    kept: dict[str | None, list[tuple[str | None, str]]] = {}
    dropped: list[str] = []
    after: str | None = None
    for title, text in _sections(before):
        if title is not None and title not in ours:
            if BY_HAND in text:
                kept.setdefault(after, []).append((title, text))
            else:
                dropped.append(title)
                continue
        after = title

    out: list[str] = []

    def emit(title: str | None) -> None:
        for own, text in kept.pop(title, []):
            if out and not out[-1].endswith("\n\n"):
                out[-1] += "\n"  # a section ends in a blank line before the next heading
            out.append(text)
            emit(own)

    for title, text in _sections(written):
        out.append(text)
        emit(title)
    for title in list(kept):  # what followed a section the report no longer writes: at the end
        emit(title)
    return "".join(out), dropped


def _sections(page: str) -> list[tuple[str | None, str]]:
    """A page cut before each second-level heading: (its title, or None for what comes first;
    its text)."""
    parts: list[tuple[str | None, str]] = []
    for line in page.splitlines(keepends=True):
        if line.startswith("## "):
            parts.append((line[3:].strip(), line))
        elif parts:
            title, text = parts[-1]
            parts[-1] = (title, text + line)
        else:
            parts.append((None, line))
    return parts


if __name__ == "__main__":
    cli()
