"""Reader processes searching while one writer ingests a burst."""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db

from .kills import start_watch, stop
from .state import (
    SAMPLE,
    SCRIPT,
    committed,
    memdex_cli,
    problems,
    wait_for,
)


# -- load ------------------------------------------------------------------------------------
def reader_loop(
    db_path: Path, stop_file: Path, seed: int, base_tokens: int, burst_tokens: int
) -> dict[str, Any]:
    """Search until ``stop_file`` exists. A base token must always be found (it was committed
    before the readers started); a burst token, once found, must stay found."""
    rng = random.Random(seed)
    conn = db.connect(db_path, create=False, readonly=True)
    Path(f"{stop_file}.ready-{seed}").touch()
    latencies: dict[str, list[float]] = {"committed note": [], "burst note": [], "words": []}
    errors: list[str] = []
    seen: set[int] = set()
    words = ["worktree", "deploy key rotation", "Chatty", "what did we decide about sqlite?", "index"]
    while not stop_file.exists():
        roll = rng.random()
        started = time.perf_counter()
        try:
            if roll < 0.4:
                kind, i = "committed note", rng.randrange(base_tokens)
                found = search(conn, f"zqbase{i}", use_synonyms=False).hits
                if [h.key for h in found] != [f"base/b{i:05d}.md"]:
                    errors.append(f"zqbase{i} gave {[h.key for h in found]}")
            elif roll < 0.8:
                kind, j = "burst note", rng.randrange(burst_tokens)
                found = search(conn, f"zqplant{j}", use_synonyms=False).hits
                if found:
                    seen.add(j)
                elif j in seen:
                    errors.append(f"zqplant{j} was found, then not")
            else:
                kind = "words"
                search(conn, rng.choice(words))
        except Exception as exc:  # the failure being counted
            errors.append(f"{type(exc).__name__}: {exc}")
        latencies[kind].append((time.perf_counter() - started) * 1000)
    conn.close()
    return {"searches": sum(map(len, latencies.values())), "errors": errors, "latencies_ms": latencies}


def percentiles(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)

    def at(p: float) -> float:
        return round(ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))], 2)

    return {"p50": at(50), "p95": at(95), "p99": at(99), "max": round(ordered[-1], 2)}


def load(
    work: Path, readers: int, notes: int, writer: str = "index", base: int = 500, reader_nice: int = 0
) -> dict[str, Any]:
    """``readers`` processes search while one writer ingests ``notes`` new notes (``memdex
    index`` of a new root, or a running ``memdex watch`` seeing them written). Zero errors
    means every search returned, every committed note stayed findable, none came back
    missing, and at the end every note of the burst is found.

    ``reader_nice``: the readers' niceness. At 0 they take their share of the CPU, and on 2
    cores eight of them leave the writer a fifth of one (what a busy machine is like); above
    0 the writer runs nearer its own speed, the readers on what it leaves."""
    import synth

    root = work / "load"
    (root / "base").mkdir(parents=True)
    for i in range(base):
        (root / "base" / f"b{i:05d}.md").write_text(f"# Base {i}\n\nzqbase{i} was here before the burst.\n")
    shutil.copytree(SAMPLE / "notes", root / "sample-notes")
    db_path = work / "load.db"
    burst = work / "burst" if writer == "index" else root / "burst"
    if writer == "index":
        synth.write_notes(burst, notes, seed=5)  # written first: the run times the writer alone
    conn = db.connect(db_path)
    index_paths(conn, [root])
    conn.close()
    initial = committed(db_path)
    stop_file = work / "stop"
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                str(SCRIPT),
                "reader",
                str(db_path),
                str(stop_file),
                str(n),
                str(base),
                str(notes),
            ],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(readers)
    ]
    if reader_nice:  # set while they start up: they only import memdex before the burst
        for proc in procs:
            os.setpriority(os.PRIO_PROCESS, proc.pid, os.getpriority(os.PRIO_PROCESS, 0) + reader_nice)
    watch = None
    try:
        ready = [Path(f"{stop_file}.ready-{n}") for n in range(readers)]
        wait_for(lambda: all(r.exists() for r in ready), 60, "the readers to start")
        started = time.monotonic()
        if writer == "index":
            done = memdex_cli(db_path, "index", "--quiet", str(burst))
            writer_ok = done.returncode == 0
        else:
            watch = start_watch(db_path, work / "watch.log")
            synth.write_notes(burst, notes, seed=5)
            wait_for(lambda: committed(db_path) >= initial + notes, 600, "the watcher to ingest the burst")
            writer_ok = stop(watch) == 0
        ingest_s = time.monotonic() - started
    finally:
        stop_file.touch()
        outputs = [json.loads(p.communicate(timeout=120)[0]) for p in procs]
        if watch is not None and watch.poll() is None:
            watch.kill()
            watch.wait()
    conn = db.connect(db_path, create=False, readonly=True)
    missing = [j for j in range(notes) if not search(conn, f"zqplant{j}", use_synonyms=False).hits]
    conn.close()
    by_kind = {k: [x for o in outputs for x in o["latencies_ms"][k]] for k in outputs[0]["latencies_ms"]}
    latencies = [x for values in by_kind.values() for x in values]
    errors = [e for o in outputs for e in o["errors"]]
    return {
        "readers": readers,
        "reader_nice": reader_nice,
        "writer": f"memdex {writer}",
        "burst_notes": notes,
        "writer_ok": writer_ok,
        "ingest_s": round(ingest_s, 2),
        "searches": len(latencies),
        "searches_per_s": round(len(latencies) / ingest_s, 1),
        "searches_per_reader": [o["searches"] for o in outputs],
        "errors": len(errors),
        "error_examples": errors[:5],
        "latency_ms": percentiles(latencies),
        "latency_ms_by_query": {k: percentiles(v) for k, v in by_kind.items() if v},
        "cpus": os.cpu_count(),
        "burst_notes_missing_after": len(missing),
        "problems": problems(db_path),
    }
