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
import os
import random
import resource
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import click

import memdex
from memdex import db

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # scripts/synth.py, the corpus generator
DATA = HERE.parent.parent / "shared" / "data"
SAMPLE = HERE.parent / "memdex" / "sample-corpus"
MEMDEX = [sys.executable, "-m", "memdex"]


# -- what an index holds, by natural keys (row ids differ between two indexes of one tree) ----
CANONICAL = {
    "roots": "SELECT path, kind, detected_kind, scope, chunk_tokens FROM roots",
    "files": "SELECT path, rel_path, kind, size, mtime_ns, sha256 FROM files",
    "documents": """SELECT f.path, d.key, d.kind, d.title, d.description, d.tags, d.topics, d.namespace,
        d.type, d.scope, d.platform, d.date, d.created, d.modified, d.line_count, d.size_bytes,
        d.est_tokens, d.meta FROM documents d JOIN files f ON f.id = d.file_id""",
    "chunks": """SELECT f.path, d.key, c.seq, c.heading, c.text, c.line_start, c.line_end, c.size_bytes,
        c.meta FROM chunks c JOIN documents d ON d.id = c.document_id JOIN files f ON f.id = d.file_id""",
    "topics": """SELECT f.path, d.key, t.topic, t.source, s.path, t.line FROM topics t
        JOIN documents d ON d.id = t.document_id JOIN files f ON f.id = d.file_id
        LEFT JOIN files s ON s.id = t.source_file_id""",
    "index_links": """SELECT f.path, l.line, l.keywords, l.target, l.label FROM index_links l
        JOIN files f ON f.id = l.file_id""",
    "ingest_errors": "SELECT path, reason, size, mtime_ns FROM ingest_errors",
    "record_errors": """SELECT f.path, r.record, r.reason FROM record_errors r
        JOIN files f ON f.id = r.file_id""",
    "synonyms": "SELECT term, synonym, source FROM synonyms",
}


def canonical(db_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    "Every row a search or `memdex status` can see, sorted, without ids or timestamps."
    conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return {
            name: sorted(conn.execute(sql).fetchall(), key=lambda r: json.dumps(r, default=str))
            for name, sql in CANONICAL.items()
        }
    finally:
        conn.close()


def differences(got: dict[str, list[Any]], expected: dict[str, list[Any]]) -> dict[str, int]:
    "Rows missing or extra, per table; empty when the two indexes hold the same."
    out = {}
    for table in expected:
        a, b = Counter(map(tuple, got[table])), Counter(map(tuple, expected[table]))
        if a != b:
            out[table] = sum(((a - b) + (b - a)).values())
    return out


def problems(db_path: Path) -> list[str]:
    "PRAGMA integrity_check and FTS5's integrity-check (memdex.db.check) on a fresh connection."
    conn = db.connect(db_path, create=False)
    try:
        return db.check(conn)
    finally:
        conn.close()


def committed(db_path: Path, under: Path | None = None) -> int:
    """Documents a reader sees now, all or those of files ``under`` a folder (0 while the
    database does not exist or is being created)."""
    sql = "SELECT count(*) FROM documents d JOIN files f ON f.id = d.file_id WHERE f.path LIKE :prefix"
    try:
        conn = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=5)
        try:
            return int(conn.execute(sql, {"prefix": f"{under}{os.sep}%" if under else "%"}).fetchone()[0])
        finally:
            conn.close()
    except sqlite3.Error:
        return 0


def fresh_index(root: Path | list[Path], db_path: Path) -> dict[str, list[tuple[Any, ...]]]:
    "What a clean index of the tree as it is now holds."
    for p in db_path.parent.glob(db_path.name + "*"):
        p.unlink()
    conn = db.connect(db_path)
    memdex.index_paths(conn, root if isinstance(root, list) else [root])
    conn.close()
    return canonical(db_path)


def memdex_cli(db_path: Path, *args: str, **kwargs: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*MEMDEX, "--db", str(db_path), *args], capture_output=True, text=True, **kwargs)


def wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.005)


@contextmanager
def workdir(keep: Path | None = None) -> Iterator[Path]:
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        yield keep
        return
    with tempfile.TemporaryDirectory(prefix="memdex-reliability-") as tmp:
        yield Path(tmp)


# -- hostile queries -------------------------------------------------------------------------
FTS_BITS = [
    '"', "'", "`", "AND", "OR", "NOT", "NEAR(", "NEAR", "NEAR(a b, 2)", "(", ")", "((", "*", "-", "+",
    ":", "^", ",", "title:", "heading:", "text:", "{title tags}:", "-title:", "\\", "%", "_", "\x00",
    "\u200b", "\ud800", "\udcff", "ﬁ", "ß", "İ", "🦜", "مرحبا", "中文", "\u0301", "\r\n", "\t", "--",
    ";", "DROP TABLE documents;", "'); DROP TABLE chunks;--", "*:*", "'OR'1'='1", "x\"y", "a*b",
    "NOT NOT", "AND AND", "OR)", "^^", "\"\"\"", "$", "?", "!", "=", "<script>", "../../etc/passwd",
]  # fmt: skip


def hostile_query(rng: random.Random, words: list[str]) -> str:
    "A query as an agent, a fuzzer or a copy-paste accident might write it."
    roll = rng.random()
    if roll < 0.05:  # long: up to 10 KB
        piece = rng.choice(words + FTS_BITS)
        return ((piece + rng.choice([" ", ""])) * (10_000 // max(1, len(piece) + 1)))[:10_000]
    if roll < 0.15:  # any code points at all, surrogates included
        return "".join(chr(rng.randrange(0x110000)) for _ in range(rng.randint(1, 40)))
    parts = rng.choices(words + FTS_BITS, k=rng.randint(1, 12))
    return rng.choice([" ", "", "  "]).join(parts)


def vocabulary(conn: sqlite3.Connection, n: int = 300) -> list[str]:
    rows = conn.execute("SELECT term FROM chunks_vocab ORDER BY doc DESC LIMIT ?", (n,)).fetchall()
    return [r[0] for r in rows] + ["ChatGPT", "Chatty", "worktree", "deploy", "October", "2025"]


def fuzz_queries(db_path: Path, count: int, seed: int) -> dict[str, Any]:
    """``count`` hostile strings through ``memdex.search`` (escaped and ``--raw``), some through
    the CLI and answer mode: each must give results or a documented error, never a traceback."""
    from click.testing import CliRunner

    from memdex.cli import cli
    from memdex.dispatch import run as dispatch
    from memdex.errors import MemdexError, QuerySyntaxError
    from memdex.mcp_server import Tools

    rng = random.Random(seed)
    conn = db.connect(db_path, create=False, readonly=True)
    words = vocabulary(conn)
    outcomes: Counter[str] = Counter()
    failures: list[dict[str, str]] = []
    runner = CliRunner()
    tools = Tools(db_path)
    for i in range(count):
        text = hostile_query(rng, words)
        options = {
            "limit": rng.choice([1, 5, 10, 50]),
            "granularity": rng.choice(["doc", "chunk"]),
            "use_synonyms": rng.random() < 0.7,
            "max_tokens": rng.choice([None, None, 1, 500]),
        }
        try:
            result = memdex.search(conn, text, **options)
            json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")
            assert all(0 <= h.relevance <= 1 for h in result.hits)
            outcomes["escaped: results" if result.hits else "escaped: no results"] += 1
            try:
                memdex.search(conn, text, raw=True, **options)
                outcomes["raw: ran"] += 1
            except QuerySyntaxError:
                outcomes["raw: QuerySyntaxError"] += 1
            if i % 10 == 0:  # the command line, as an agent calls it
                out = runner.invoke(cli, ["--db", str(db_path), "search", "--json", "--", text])
                assert out.exit_code == 0 and out.exception is None, out.output
                json.loads(out.stdout)
                outcomes["cli: exit 0"] += 1
            if i % 10 == 5:  # the MCP tool, as an agent calls it: errors only of the documented kinds
                reply = tools.search_knowledge_base(text, mode=rng.choice(["search", "auto"]))
                kind = (
                    json.loads(reply.content[0].text).get("error", {}).get("type") if reply.is_error else None
                )
                assert kind in (None, "invalid_parameter"), reply.content[0].text
                outcomes[f"mcp: {kind or 'results'}"] += 1
            if i % 25 == 0:  # answer mode, extractive: a question memdex must not crash on
                try:
                    dispatch(conn, text, mode="answer", use_llm=False)
                    outcomes["answer: answered"] += 1
                except MemdexError:
                    outcomes["answer: MemdexError"] += 1
        except Exception as exc:  # the failure being counted: anything not documented
            failures.append({"query": repr(text)[:300], "error": "".join(traceback.format_exception(exc))})
    conn.close()
    return {
        "queries": count,
        "outcomes": dict(outcomes),
        "tracebacks": len(failures),
        "failures": failures[:5],
    }


# -- hostile files ---------------------------------------------------------------------------
HOSTILE_BYTES = [
    b"\x00", b"\xff\xfe", b"\xfe\xff", b"\xef\xbb\xbf", b"\xff", b"\xc3", b"---\n", b"---\ntitle: [\n---\n",
    b"&a [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n", b'{"mapping": ', b'"chat_messages": null', b"[" * 3000,
    b"{" * 3000, b"| a | b |\n|---|---|\n", b"\n# " * 300, b"x" * 100_000, b"\r", "\u2028".encode(),
    b"null", b"]", b'"current_node": 7', b"```\n", b"\n---\n---\n", b"<!--", b"\\u0000",
    b"keywords: [x](../../../etc/passwd)\n", b"|kw: [a](a.md) (10)\n",
]  # fmt: skip


def seed_files() -> list[tuple[str, bytes]]:
    "(name, bytes) of one real file of every kind memdex reads."
    chosen = [
        SAMPLE / "memories" / "decisions" / "project" / "use-sqlite-wal.memory.md",
        SAMPLE / "chats" / "exports" / "conversations.json",
        SAMPLE / "notes" / "chatgpt-prompting-tips.md",
        SAMPLE / "serena" / "memory-index.md",
        SAMPLE / "serena" / "skills-git-index.md",
        DATA / "chats" / "chatgpt" / "chatlore" / "conversations.json",
        DATA / "chats" / "chatgpt" / "realazthat-chatgpt2graph" / "conversations.json",
        DATA / "chats" / "claude" / "chatlore" / "conversations.json",
        DATA / "chats" / "claude" / "osteele-claude-chat-viewer" / "sampleConversations" / "debugging.json",
        DATA / "chats" / "gemini" / "chatlore" / "MyActivity.json",
    ]
    found = [(p.name, p.read_bytes()) for p in chosen]
    found += [(p.name, p.read_bytes()) for p in sorted((DATA / "mnemonic").rglob("*.memory.md"))[:4]]
    return found


def mutate(data: bytes, rng: random.Random) -> bytes:
    "Flip, cut, insert and splice: the ways a file gets damaged or crafted."
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        at = rng.randrange(len(out) + 1)
        op = rng.choice(["flip", "truncate", "insert", "delete", "hostile", "random"])
        if op == "flip" and out:
            out[min(at, len(out) - 1)] ^= 1 << rng.randrange(8)
        elif op == "truncate":
            del out[at:]
        elif op == "insert":
            out[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 16)))
        elif op == "delete":
            del out[at : at + rng.randint(1, 64)]
        elif op == "hostile":
            out[at:at] = rng.choice(HOSTILE_BYTES)
        else:
            out = bytearray(rng.randbytes(rng.randint(0, 2048)))
    return bytes(out)


def file_outcome(conn: sqlite3.Connection, report: Any, path: Path, data: bytes) -> str:
    "indexed | skipped (reported) | passed over (not a source) -- or a loss, which raises."
    import hashlib

    row = conn.execute("SELECT sha256 FROM files WHERE path = ?", (str(path),)).fetchone()
    skipped = [s for s in report.skipped if s.path == str(path)]
    error = conn.execute("SELECT reason FROM ingest_errors WHERE path = ?", (str(path),)).fetchone()
    if skipped:
        assert error is not None, f"{path} was reported but not recorded"
        return "skipped (reported and recorded)"
    if row is not None:
        assert row[0] == hashlib.sha256(data).hexdigest(), f"{path} is indexed from other bytes"
        return "indexed"
    assert path.suffix == ".json", f"{path} was neither indexed nor reported"
    return "passed over (a JSON file that is no chat export)"


def fuzz_files(work: Path, count: int, seed: int) -> dict[str, Any]:
    """``count`` damaged or crafted files, each indexed over its last good version beside a
    control note: the run must finish, the note be found, and the file be indexed, or be
    reported with its last good version kept (a JSON file that is no export is passed over)."""
    os.environ["MEMDEX_RAISE_ERRORS"] = "1"  # a parser bug raises here instead of being recorded
    rng = random.Random(seed)
    seeds = seed_files()
    outcomes: Counter[str] = Counter()
    failures: list[dict[str, str]] = []
    lost_on_pass_over = 0
    for i in range(count):
        name, good = rng.choice(seeds)
        case = work / f"case-{i}"
        root = case / "root"
        root.mkdir(parents=True)
        (root / "control.md").write_text(f"# Control\n\nzqcontrol{i} stays findable.\n")
        target = root / name
        target.write_bytes(good)
        db_path = case / "f.db"
        bad = mutate(good, rng)
        try:
            conn = db.connect(db_path)
            memdex.index_paths(conn, [root])
            before = _rows_of(conn, target)
            target.write_bytes(bad)
            os.utime(target, ns=(time.time_ns(), time.time_ns() + 10**9))  # always seen as changed
            report = memdex.index_paths(conn, [root])
            outcome = file_outcome(conn, report, target, bad)
            if outcome.startswith("skipped"):
                assert _rows_of(conn, target) == before, "the last good version was not kept"
            if outcome.startswith("passed over") and before:
                lost_on_pass_over += 1
            assert [h.path for h in memdex.search(conn, f"zqcontrol{i}").hits] == [str(root / "control.md")]
            assert db.check(conn) == []
            conn.close()
            outcomes[outcome] += 1
        except Exception as exc:
            failures.append(
                {"file": name, "bytes": bad[:200].hex(), "error": "".join(traceback.format_exception(exc))}
            )
        shutil.rmtree(case)
    return {
        "files": count,
        "seeds": len(seeds),
        "outcomes": dict(outcomes),
        "failures": len(failures),
        "failure_examples": failures[:5],
        "indexed_exports_passed_over": lost_on_pass_over,
    }


def _rows_of(conn: sqlite3.Connection, path: Path) -> list[tuple[Any, ...]]:
    return [
        tuple(r)
        for r in conn.execute(
            "SELECT d.key, d.title, c.seq, c.text FROM documents d JOIN files f ON f.id = d.file_id "
            "JOIN chunks c ON c.document_id = d.id WHERE f.path = ? ORDER BY d.key, c.seq",
            (str(path),),
        )
    ]


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
    "After a kill: the file's checks, then a re-run, then the same rows as a fresh index."
    before = problems(db_path)
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
        info = kill_index(db_path, root, after=rng.uniform(0.05, full if k % 2 == 0 else full / 3))

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
    from memdex.lock import holder
    from memdex.service import read_state

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
    memdex.index_paths(conn, [root])
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
        memdex.index_paths(conn, roots)
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
                found = memdex.search(conn, f"zqbase{i}", use_synonyms=False).hits
                if [h.key for h in found] != [f"base/b{i:05d}.md"]:
                    errors.append(f"zqbase{i} gave {[h.key for h in found]}")
            elif roll < 0.8:
                kind, j = "burst note", rng.randrange(burst_tokens)
                found = memdex.search(conn, f"zqplant{j}", use_synonyms=False).hits
                if found:
                    seen.add(j)
                elif j in seen:
                    errors.append(f"zqplant{j} was found, then not")
            else:
                kind = "words"
                memdex.search(conn, rng.choice(words))
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


def load(work: Path, readers: int, notes: int, writer: str = "index", base: int = 500) -> dict[str, Any]:
    """``readers`` processes search while one writer ingests ``notes`` new notes (``memdex
    index`` of a new root, or a running ``memdex watch`` seeing them written). Zero errors
    means every search returned, every committed note stayed findable, none came back
    missing, and at the end every note of the burst is found."""
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
    memdex.index_paths(conn, [root])
    conn.close()
    initial = committed(db_path)
    stop_file = work / "stop"
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "reader", str(db_path), str(stop_file), str(n), str(base), str(notes)],
            stdout=subprocess.PIPE,
            text=True,
        )
        for n in range(readers)
    ]
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
    missing = [j for j in range(notes) if not memdex.search(conn, f"zqplant{j}", use_synonyms=False).hits]
    conn.close()
    by_kind = {k: [x for o in outputs for x in o["latencies_ms"][k]] for k in outputs[0]["latencies_ms"]}
    latencies = [x for values in by_kind.values() for x in values]
    errors = [e for o in outputs for e in o["errors"]]
    return {
        "readers": readers,
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
