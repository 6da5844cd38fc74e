"""kill -9 of `memdex index` and `memdex watch`, then a re-run that must converge."""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memdex.ingest.pipeline import index_paths
from memdex.store import db

from .state import (
    MEMDEX,
    SAMPLE,
    canonical,
    committed,
    differences,
    fresh_index,
    memdex_cli,
    problems,
    wait_for,
)


# -- kill -9 ---------------------------------------------------------------------------------
def kill_index(
    db_path: Path,
    root: Path,
    *,
    after: float | None = None,
    when: Callable[[], bool] | None = None,
    timeout: float = 120,
) -> dict[str, Any]:
    """Start ``memdex index ROOT`` and SIGKILL it ``after`` seconds, or as soon as ``when()``
    is true (polled every 2 ms). ``killed_mid_run`` is false when it finished first."""
    proc = subprocess.Popen(
        [*MEMDEX, "--db", str(db_path), "index", "--quiet", str(root)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        started = time.monotonic()
        while proc.poll() is None:
            waited = time.monotonic() - started
            if after is not None and waited >= after:
                break
            if when is not None and when():
                break
            if waited > timeout:
                raise TimeoutError("memdex index neither finished nor reached the kill point")
            time.sleep(0.002)
        alive = proc.poll() is None
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return {"killed_mid_run": alive, "documents_at_kill": committed(db_path)}


def recovers(db_path: Path, expected: dict[str, list[Any]], rerun: Callable[[], None]) -> dict[str, Any]:
    """After a kill: the file's checks (none if it was killed before it created the file),
    then a re-run, then the same rows as a fresh index."""
    before = problems(db_path) if db_path.exists() else []
    rerun()
    after = problems(db_path)
    diff = differences(canonical(db_path), expected)
    return {"problems_after_kill": before, "problems_after_rerun": after, "differences": diff}


def change_tree(root: Path, rng: random.Random, round_: int) -> None:
    "Edits between kills: a tenth of the files changed, some deleted, up to 1,000 added."
    files = sorted(root.rglob("*.md"))
    for path in rng.sample(files, min(len(files), len(files) // 10)):
        if rng.random() < 0.7:
            token = f"zqedit{round_}x{rng.randrange(10**6)}"
            path.write_text(path.read_text() + f"\n\nEdited in round {round_}: {token}\n")
        else:
            path.unlink()
    extra = root / f"added-{round_}"
    extra.mkdir(exist_ok=True)
    for j in range(rng.randint(1, 1000)):
        (extra / f"n{j}.md").write_text(f"# Added {round_} {j}\n\nzqadded{round_}x{j} words\n")


def kill_index_rounds(work: Path, kills: int, notes: int, seed: int) -> dict[str, Any]:
    """Kill ``memdex index`` at random moments: even rounds during a first index of the tree,
    odd ones during the run that follows changes to it."""
    import synth

    rng = random.Random(seed)
    root = work / "notes"
    synth.write_notes(root, notes)
    db_path, fresh = work / "killed.db", work / "fresh.db"
    started = time.monotonic()
    fresh_index(root, fresh)
    full = time.monotonic() - started + 0.3  # and the command's start-up
    rounds = []
    for k in range(kills):
        if k % 2 == 0:
            for p in work.glob("killed.db*"):
                p.unlink()
        else:
            change_tree(root, rng, k)
        expected = fresh_index(root, fresh)
        info = kill_index(db_path, root, after=rng.uniform(0.05, full if k % 2 == 0 else full / 5))

        def rerun() -> None:
            out = memdex_cli(db_path, "index", "--quiet", str(root))
            assert out.returncode == 0, out.stderr

        info["documents_expected"] = len(expected["documents"])
        kind = "first index" if k % 2 == 0 else "update"
        rounds.append({"round": kind, **info, **recovers(db_path, expected, rerun)})
    return _kill_summary(rounds, {"notes": notes, "full_index_s": round(full, 2)})


def _kill_summary(rounds: list[dict[str, Any]], extra: dict[str, Any]) -> dict[str, Any]:
    bad = [r for r in rounds if r["problems_after_kill"] or r["problems_after_rerun"] or r["differences"]]
    return {
        **extra,
        "kills": len(rounds),
        "killed_mid_run": sum(r["killed_mid_run"] for r in rounds),
        "survived": len(rounds) - len(bad),
        "corrupted_or_diverged": len(bad),
        "documents_at_kill": [[r.get("documents_at_kill"), r.get("documents_expected")] for r in rounds],
        "bad_examples": bad[:3],
    }


def start_watch(db_path: Path, log: Path) -> subprocess.Popen[bytes]:
    "memdex watch as its own process; returns once its start-up catch-up is done."
    from memdex.store.lock import holder
    from memdex.watch.service import read_state

    with log.open("ab") as stderr:
        proc = subprocess.Popen([*MEMDEX, "--db", str(db_path), "watch"], stderr=stderr)
    try:
        wait_for(
            lambda: (
                (
                    (holder(db_path) or {}).get("pid") == proc.pid
                    and (read_state(db_path) or {}).get("pid") == proc.pid
                    and (read_state(db_path) or {}).get("catch_up") is not None
                )
                or proc.poll() is not None
            ),
            120,
            "memdex watch to be ready",
        )
    except BaseException:
        proc.kill()
        proc.wait()
        raise
    if proc.poll() is not None:
        raise RuntimeError(f"memdex watch exited with {proc.returncode}: {log.read_text()[-2000:]}")
    return proc


def stop(proc: subprocess.Popen[bytes]) -> int:
    proc.terminate()
    try:
        return proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        return proc.wait()


def kill_watch_rounds(work: Path, kills: int, burst: int, seed: int) -> dict[str, Any]:
    "Kill ``memdex watch`` during bursts of creates, edits, deletes and moves; restart it."
    rng = random.Random(seed)
    root = work / "watched"
    shutil.copytree(SAMPLE / "serena", root)
    db_path, fresh = work / "watched.db", work / "fresh.db"
    conn = db.connect(db_path)
    index_paths(conn, [root])
    conn.close()
    rounds = []
    for k in range(kills):
        proc = start_watch(db_path, work / "watch.log")
        try:
            for old in sorted(root.glob("burst-*")):  # earlier bursts: edits, deletes, a move
                files = sorted(old.glob("*.md"))
                for path in rng.sample(files, min(20, len(files))):
                    if rng.random() < 0.5:
                        path.write_text(path.read_text() + f"edited {k}\n")
                    else:
                        path.unlink()
                if rng.random() < 0.3:
                    old.rename(old.with_name(f"{old.name}-moved-{k}"))
            folder = root / f"burst-{k}"
            folder.mkdir()
            kill_at = time.monotonic() + rng.uniform(0.05, 1.5)  # from the first write of the burst
            for j in range(burst):
                (folder / f"m{j:04d}.md").write_text(f"# Burst {k} {j}\n\nzqburst{k}x{j} about grebes\n")
            while time.monotonic() < kill_at and proc.poll() is None:
                time.sleep(0.002)
            at_kill = committed(db_path, folder)
            alive = proc.poll() is None
        finally:
            proc.kill()
            proc.wait()
        expected = fresh_index(root, fresh)

        def rerun() -> None:
            again = start_watch(db_path, work / "watch.log")  # its start-up catch-up is the re-run
            assert stop(again) == 0

        done = len([r for r in expected["files"] if r[0].startswith(f"{folder}{os.sep}")])
        info = {"killed_mid_run": alive and at_kill < done, "documents_at_kill": at_kill}
        rounds.append({**info, "documents_expected": done, **recovers(db_path, expected, rerun)})
    return _kill_summary(rounds, {"burst_files": burst})
