"""A full disk, and indexes memdex may not write: read-only, locked, from a newer memdex."""

from __future__ import annotations

import os
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

from memdex.ingest.pipeline import index_paths
from memdex.store import db

from .state import (
    MEMDEX,
    canonical,
    differences,
    fresh_index,
    memdex_cli,
    problems,
)


# -- a full disk -----------------------------------------------------------------------------
def can_mount_tmpfs() -> bool:
    "A tiny filesystem needs a mount namespace: root, or unprivileged user namespaces."
    if not shutil.which("unshare") or sys.platform != "linux":
        return False
    probe = subprocess.run(
        ["unshare", "-rm", "sh", "-c", "d=$(mktemp -d) && mount -t tmpfs -o size=64k tmpfs $d"],
        capture_output=True,
    )
    return probe.returncode == 0


def index_on_full_disk(db_path: Path, roots: list[Path], out: Path, room: int) -> dict[str, Any]:
    """``memdex index ROOTS`` on a copy of ``db_path`` in a tmpfs with ``room`` bytes to spare;
    what is left of the database is copied to ``out``. Linux, with unshare."""
    out.mkdir(parents=True, exist_ok=True)
    mnt = out / "mnt"
    mnt.mkdir()
    script = (
        'mount -t tmpfs -o size="$SIZE" tmpfs "$MNT" || exit 99\n'
        'cp "$DB" "$MNT/full.db"\n'
        '"$PY" -m memdex --db "$MNT/full.db" index --quiet "$@" 2>"$OUT/stderr"\n'
        'echo $? > "$OUT/rc"\n'
        'for f in "$MNT/full.db" "$MNT/full.db-wal"; do [ -e "$f" ] && cp "$f" "$OUT/"; done\n'
        "exit 0\n"
    )
    env = {
        **os.environ,
        "SIZE": f"{(db_path.stat().st_size + room) // 1024 + 1}k",
        "MNT": str(mnt),
        "DB": str(db_path),
        "PY": sys.executable,
        "OUT": str(out),
    }
    args = ["unshare", "-rm", "sh", "-c", script, "sh", *map(str, roots)]
    done = subprocess.run(args, env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"could not run on a tmpfs: {done.stderr}")
    shown = (out / "stderr").read_text().replace(str(mnt / "full.db"), str(db_path))
    shutil.copy(out / "full.db", db_path)  # the database as the failed run left it
    Path(f"{db_path}-wal").unlink(missing_ok=True)
    if (out / "full.db-wal").exists():
        shutil.copy(out / "full.db-wal", f"{db_path}-wal")
    return {"exit_code": int((out / "rc").read_text()), "stderr": shown}


def index_over_file_size_limit(db_path: Path, roots: list[Path], room: int) -> dict[str, Any]:
    "``memdex index ROOTS`` in a process that may not grow a file past the index's size + ``room``."
    limit = sum(p.stat().st_size for p in db_path.parent.glob(db_path.name + "*")) + room

    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a failed write instead of a killed process
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    out = subprocess.run(
        [*MEMDEX, "--db", str(db_path), "index", "--quiet", *map(str, roots)],
        capture_output=True,
        text=True,
        preexec_fn=limited,
    )
    return {"exit_code": out.returncode, "stderr": out.stderr}


def by_file(dump: dict[str, list[tuple[Any, ...]]]) -> dict[str, list[tuple[Any, ...]]]:
    "Each file's documents, chunks and topics (rows start with the file's path)."
    out: dict[str, list[tuple[Any, ...]]] = {}
    for table in ("documents", "chunks", "topics"):
        for row in dump[table]:
            out.setdefault(row[0], []).append((table, *row))
    return out


def each_file_old_or_new(
    got: dict[str, list[Any]], before: dict[str, list[Any]], after: dict[str, list[Any]]
) -> list[str]:
    "Files whose rows are neither their state before a failed run nor what the run would write."
    g, b, a = by_file(got), by_file(before), by_file(after)
    return sorted(p for p in set(g) | set(b) if g.get(p) not in (b.get(p), a.get(p)))


def disk_scenario(work: Path, name: str, notes: int, burst: int) -> tuple[Path, list[Path], dict[str, Any]]:
    """An index of ``notes`` notes, then 20 of them edited and a new root of ``burst`` notes:
    the run that will meet a full disk. Returns the database, both roots and the state before."""
    import synth

    base, big = work / f"{name}-base", work / f"{name}-big"
    synth.write_notes(base, notes, seed=1)
    synth.write_notes(big, burst, seed=2)
    db_path = work / f"{name}.db"
    before = fresh_index(base, db_path)
    for path in sorted(base.rglob("*.md"))[:20]:
        path.write_text(path.read_text() + "\nEdited: zqedited words.\n")
    return db_path, [base, big], before


def judge_full_disk(
    db_path: Path, roots: list[Path], before: dict[str, Any], got: dict[str, Any]
) -> dict[str, Any]:
    "What a failed run left, and whether the next run, with room again, converges."
    after = fresh_index(roots, db_path.with_name(db_path.stem + "-fresh.db"))
    left = canonical(db_path)
    result = {
        "exit_code": got["exit_code"],
        "message": got["stderr"].strip(),
        "traceback": "Traceback" in got["stderr"],
        "problems": problems(db_path),
        "files_half_written": each_file_old_or_new(left, before, after),
        "documents_before_after_expected": [
            len(before["documents"]),
            len(left["documents"]),
            len(after["documents"]),
        ],
    }
    rerun = memdex_cli(db_path, "index", "--quiet", *map(str, roots))
    result["converged_after_room_returned"] = rerun.returncode == 0 and not differences(
        canonical(db_path), after
    )
    return result


def full_disk(work: Path, notes: int = 300, burst: int = 3000) -> dict[str, Any]:
    "A write that runs out of room: a clear error, every file old or new, then convergence."
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {}
    # room for a little (nothing of the run fits) and for more (some batches commit first)
    for when, room in (("early", 150_000), ("late", 6_000_000)):
        if can_mount_tmpfs():
            db_path, roots, before = disk_scenario(work, f"tmpfs-{when}", notes, burst)
            got = index_on_full_disk(db_path, roots, work / f"tmpfs-{when}-out", room)
            results[f"tmpfs_{when}"] = judge_full_disk(db_path, roots, before, got)
        db_path, roots, before = disk_scenario(work, f"fsize-{when}", notes, burst)
        got = index_over_file_size_limit(db_path, roots, room + 1)
        results[f"file_size_limit_{when}"] = judge_full_disk(db_path, roots, before, got)
    results["page_limit"] = page_limit(work, notes, burst)
    return results


def page_limit(work: Path, notes: int, burst: int) -> dict[str, Any]:
    "The same in one process, with PRAGMA max_page_count as the disk: the library's error."
    from memdex.errors import DatabaseError

    db_path, roots, before = disk_scenario(work, "pages", notes, burst)
    conn = db.connect(db_path)
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages + 40:d}")  # an int, formatted as one
    message = ""
    try:
        index_paths(conn, roots)
    except DatabaseError as exc:
        message = str(exc)
    conn.close()
    return judge_full_disk(db_path, roots, before, {"exit_code": None, "stderr": message})


# -- read-only, locked, schema versions ------------------------------------------------------
def unprivileged() -> list[str]:
    "A prefix that runs a command without root's right to write anything (util-linux setpriv)."
    return ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []


def refusals(work: Path) -> dict[str, Any]:
    "Read-only file and folder, a foreign exclusive lock, newer and older schemas, through the CLI."
    root = work / "r-notes"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nzqalpha words\n")
    out: dict[str, Any] = {}

    def case(name: str, db_path: Path, *args: str, prefix: list[str] | None = None) -> None:
        done = subprocess.run(
            [*(prefix or []), *MEMDEX, "--db", str(db_path), *args], capture_output=True, text=True
        )
        out[name] = {
            "exit_code": done.returncode,
            "message": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else "",
            "traceback": "Traceback" in done.stderr,
        }

    ro_file = work / "ro-file" / "i.db"
    ro_file.parent.mkdir()
    fresh_index(root, ro_file)
    ro_file.chmod(0o444)
    (root / "b.md").write_text("# Beta\n")
    case("read_only_file", ro_file, "index", str(root), prefix=unprivileged())
    ro_dir = work / "ro-dir" / "i.db"
    ro_dir.parent.mkdir()
    fresh_index(root, ro_dir)
    ro_dir.parent.chmod(0o555)
    try:
        case("read_only_folder", ro_dir, "index", str(root), prefix=unprivileged())
        case("read_only_folder_search", ro_dir, "search", "zqalpha", prefix=unprivileged())
    finally:
        ro_dir.parent.chmod(0o755)
    locked = work / "locked.db"
    fresh_index(root, locked)
    holder = sqlite3.connect(locked, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        case("locked_index", locked, "index", str(root))
        case("locked_search", locked, "search", "zqalpha")
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    newer = work / "newer.db"
    fresh_index(root, newer)
    raw = sqlite3.connect(newer)
    raw.execute(f"PRAGMA user_version = {db.latest_version() + 1:d}")
    raw.close()
    case("newer_schema_search", newer, "search", "zqalpha")
    case("newer_schema_index", newer, "index", str(root))
    return out
