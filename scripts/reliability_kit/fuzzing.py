"""Hostile queries and damaged files: results or documented errors, and nothing lost."""

from __future__ import annotations

import json
import os
import random
import shutil
import sqlite3
import time
import traceback
from collections import Counter
from pathlib import Path
from typing import Any

from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db

from .state import (
    DATA,
    SAMPLE,
)

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
    from mcp.types import TextContent

    from memdex.doors.cli import cli
    from memdex.doors.dispatch import run as dispatch
    from memdex.doors.mcp_server import Tools
    from memdex.errors import MemdexError, QuerySyntaxError

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
            result = search(conn, text, **options)
            json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")
            assert all(0 <= h.relevance <= 1 for h in result.hits)
            outcomes["escaped: results" if result.hits else "escaped: no results"] += 1
            try:
                search(conn, text, raw=True, **options)
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
                body = "".join(c.text for c in reply.content if isinstance(c, TextContent))
                kind = json.loads(body).get("error", {}).get("type") if reply.is_error else None
                assert kind in (None, "invalid_parameter"), body
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
            index_paths(conn, [root])
            before = _rows_of(conn, target)
            target.write_bytes(bad)
            os.utime(target, ns=(time.time_ns(), time.time_ns() + 10**9))  # always seen as changed
            report = index_paths(conn, [root])
            outcome = file_outcome(conn, report, target, bad)
            if outcome.startswith("skipped"):
                assert _rows_of(conn, target) == before, "the last good version was not kept"
            if outcome.startswith("passed over") and before:
                lost_on_pass_over += 1
            assert [h.path for h in search(conn, f"zqcontrol{i}").hits] == [str(root / "control.md")]
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
