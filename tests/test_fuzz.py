"""Property tests (hypothesis) through the public API and the command line.

- Any query string gives results or a documented memdex error, never a traceback.
- Any bytes as a memory file, a note, a Serena index or a chat export: the run goes on, the
  file is indexed or reported (its last good version kept), and everything else is indexed.
- A unique token planted anywhere in a generated corpus is always found, in its file.

Examples are derandomized, so every run tries the same ones; tests/test_query.py holds the
fixed hostile strings, and ``scripts/reliability.py queries|files`` the large random runs.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from memdex.doors.cli import cli
from memdex.doors.mcp_server import Tools
from memdex.errors import QuerySyntaxError
from memdex.ingest.pipeline import IndexReport, index_paths
from memdex.query.search import search
from memdex.store import db

from .conftest import SAMPLE, shared

FUZZ = settings(
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

# -- queries -------------------------------------------------------------------------------------
FTS5_SYNTAX = [
    '"', "'", "AND", "OR", "NOT", "NEAR(", "NEAR", "NEAR(a b, 2)", "(", ")", "*", "-", "+", ":", "^",
    ",", "title:", "heading:", "{title tags}:", "-title:", "\\", "%", "\x00", "--", ";", "'); DROP TABLE chunks;--",
]  # fmt: skip
WORDS = [
    "rerere",
    "ChatGPT",
    "Chatty",
    "deploy",
    "key",
    "worktree",
    "October",
    "2025",
    "last week",
    "99999 years ago",
    "since Monday",
    "sqlite",
    "what",
    "the",
]
piece = st.one_of(
    st.sampled_from(FTS5_SYNTAX),
    st.sampled_from(WORDS),
    st.text(max_size=8),
    st.characters(categories=["Cs", "Cc", "Mn", "So", "Zl"]),  # surrogates, controls, marks, emoji
)
short_queries = st.builds(
    lambda parts, sep: sep.join(parts), st.lists(piece, max_size=12), st.sampled_from([" ", "", "  "])
)
long_queries = st.builds(lambda p, n: ((p + " ") * n)[:10_000], piece, st.integers(200, 5000))
queries = st.one_of(short_queries, short_queries, short_queries, long_queries)


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    "The sample corpus (every kind), indexed once; the tests only read it."
    work = tmp_path_factory.mktemp("fuzz")
    shutil.copytree(SAMPLE, work / "sample", ignore=shutil.ignore_patterns("README.txt"))
    db_path = work / "fuzz.db"
    conn = db.connect(db_path)
    index_paths(conn, [work / "sample"])
    conn.close()
    yield db_path


@pytest.fixture(scope="module")
def reader(indexed: Path) -> Iterator[sqlite3.Connection]:
    conn = db.connect(indexed, create=False, readonly=True)
    yield conn
    conn.close()


@pytest.mark.slow
@settings(FUZZ, max_examples=600)
@given(
    text=queries,
    granularity=st.sampled_from(["doc", "chunk"]),
    limit=st.integers(1, 50),
    synonyms=st.booleans(),
    budget=st.one_of(st.none(), st.integers(1, 2000)),
)
def test_any_query_gives_results(
    reader: sqlite3.Connection, text: str, granularity: str, limit: int, synonyms: bool, budget: int | None
) -> None:
    result = search(
        reader, text, granularity=granularity, limit=limit, use_synonyms=synonyms, max_tokens=budget
    )
    assert len(result.hits) <= limit and result.found >= len(result.hits)
    # layer 0: a query of dates alone ("2025", "Oct") lists what is dated then (issue 17)
    assert all(0 <= h.relevance <= 1 and h.match_layer in (0, 1, 2, 3, 4) for h in result.hits)
    assert budget is None or result.total_tokens <= budget
    json.dumps(result.to_dict(), ensure_ascii=False).encode("utf-8")  # printable as --json
    event("results" if result.hits else "no results")


@pytest.mark.slow
@settings(FUZZ, max_examples=600)
@given(text=queries)
def test_any_raw_query_gives_results_or_a_syntax_error(reader: sqlite3.Connection, text: str) -> None:
    try:
        result = search(reader, text, raw=True)
    except QuerySyntaxError as exc:
        assert str(exc).startswith(("Invalid FTS5 query", "A raw FTS5 query may be at most")), exc
        event("QuerySyntaxError")
    else:
        event("ran")
        assert result.found >= len(result.hits)


@pytest.mark.slow
@settings(FUZZ, max_examples=150)
@given(text=queries, raw=st.booleans(), mode=st.sampled_from(["search", "auto"]))
def test_the_command_line_never_shows_a_traceback(indexed: Path, text: str, raw: bool, mode: str) -> None:
    args = ["--db", str(indexed), "search", "--json", "--mode", mode, *(["--raw"] if raw else []), "--", text]
    result = CliRunner().invoke(cli, args)  # catches what escapes: an exception here is a bug
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    event(f"exit {result.exit_code}")
    if result.exit_code == 0:
        out = json.loads(result.stdout)
        assert out["mode"] in ("search", "answer") and isinstance(out["results"], list)
    else:
        # 1: a raw syntax error, or nothing to answer; 2: --raw with a question (answer mode)
        assert result.exit_code in (1, 2) and result.stderr.startswith("Error: "), result.output
        assert raw or mode == "auto", "escaped text in search mode is never an error"


@pytest.mark.slow
@settings(FUZZ, max_examples=150)
@given(
    text=queries,
    mode=st.sampled_from(["search", "answer", "auto"]),
    granularity=st.sampled_from(["doc", "chunk"]),
)
def test_the_mcp_tool_answers_or_returns_a_documented_error(
    indexed: Path, text: str, mode: str, granularity: str
) -> None:
    reply = Tools(indexed).search_knowledge_base(text, mode=mode, granularity=granularity)  # type: ignore[arg-type]
    data = json.loads(reply.content[0].text)  # type: ignore[union-attr]
    event(data["error"]["type"] if reply.is_error else data["mode"])
    if reply.is_error:
        assert data["error"]["type"] == "invalid_parameter" and data["error"]["retry"], data
    else:
        assert data["mode"] in ("search", "answer") and "results" in data


# -- files ---------------------------------------------------------------------------------------
# One real file of each kind memdex reads, by the name it is indexed under: the sample's, or
# ../shared's (read when a test asks, so that without ../shared only those tests skip).
SEED_FILES: dict[str, Callable[[], Path]] = {
    "decision.memory.md": lambda: SAMPLE / "memories/decisions/project/use-sqlite-wal.memory.md",
    "note.md": lambda: SAMPLE / "notes/chatgpt-prompting-tips.md",
    "memory-index.md": lambda: SAMPLE / "serena/memory-index.md",
    "skills-git-index.md": lambda: SAMPLE / "serena/skills-git-index.md",
    "conversations.json": lambda: shared("chats", "chatgpt", "chatlore", "conversations.json"),
    "claude.json": lambda: shared("chats", "claude", "chatlore", "conversations.json"),
    "MyActivity.json": lambda: shared("chats", "gemini", "chatlore", "MyActivity.json"),
}


@pytest.fixture(scope="module")
def seeds() -> dict[str, bytes]:
    "Every seed file's bytes"
    return {name: where().read_bytes() for name, where in SEED_FILES.items()}


@st.composite
def damaged(draw: st.DrawFn, good: bytes) -> bytes:
    "A file cut, flipped, spliced or replaced: how files get damaged, and how they are crafted."
    data = bytearray(good)
    for _ in range(draw(st.integers(1, 4))):
        at = draw(st.integers(0, len(data)))
        op = draw(st.sampled_from(["cut", "flip", "insert", "delete", "replace"]))
        if op == "cut":
            del data[at:]
        elif op == "flip" and data:
            data[min(at, len(data) - 1)] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.one_of(st.binary(min_size=1, max_size=32), st.sampled_from(HOSTILE_BYTES)))
        elif op == "delete":
            del data[at : at + draw(st.integers(1, 64))]
        else:
            data = bytearray(draw(st.binary(max_size=2048)))
    return bytes(data)


HOSTILE_BYTES = [
    b"\x00", b"\xff\xfe", b"\xef\xbb\xbf", b"\xff", b"---\n", b"---\ntitle: [\n---\n", b"&a [*a,*a,*a]\n",
    b'{"mapping": ', b'"chat_messages": null', b"[" * 2000, b"| a | b |\n|---|---|\n", b"\r", b"null",
    b"|kw: [a](../../../etc/passwd) (10)\n", b"```\n",
]  # fmt: skip


def _layout(root: Path, name: str, data: bytes) -> Path:
    "Put the file where its kind lives: Serena indexes inside a Serena folder with a memory."
    if name.endswith("index.md"):
        shutil.copytree(SAMPLE / "serena", root, dirs_exist_ok=True)
    target = root / name
    target.write_bytes(data)
    return target


def _rows(conn: sqlite3.Connection, path: Path) -> list[tuple[Any, ...]]:
    return [
        tuple(r)
        for r in conn.execute(
            "SELECT d.key, d.title, d.topics, c.seq, c.text FROM documents d JOIN files f ON f.id = d.file_id "
            "JOIN chunks c ON c.document_id = d.id WHERE f.path = ? ORDER BY d.key, c.seq",
            (str(path),),
        )
    ]


def _outcome(conn: sqlite3.Connection, report: IndexReport, path: Path, data: bytes) -> str:
    row = conn.execute("SELECT sha256 FROM files WHERE path = ?", (str(path),)).fetchone()
    error = conn.execute("SELECT reason FROM ingest_errors WHERE path = ?", (str(path),)).fetchone()
    if any(s.path == str(path) for s in report.skipped):
        assert error is not None and error[0], "reported, but not recorded for memdex status"
        return "skipped"
    assert error is None
    if row is not None:
        assert row[0] == hashlib.sha256(data).hexdigest()
        return "indexed"
    assert path.suffix == ".json", f"{path.name} was neither indexed nor reported"
    return "passed over"


@functools.cache
def _empty_index() -> bytes:
    "A new index's file, made once: creating one runs every migration, half an example's time."
    with tempfile.TemporaryDirectory() as tmp:
        db.connect(Path(tmp) / "empty.db").close()  # the last close folds the WAL into the file
        return (Path(tmp) / "empty.db").read_bytes()


def _new_index(path: Path) -> sqlite3.Connection:
    "A connection to a new, empty index at ``path``: the file db.connect creates, copied."
    path.write_bytes(_empty_index())
    return db.connect(path, create=False)


def _check_run(root: Path, name: str, bad: bytes, good: bytes | None) -> str:
    """Index the good version (if any), then the bad one: the run finishes (a parser bug raises
    under MEMDEX_RAISE_ERRORS), the control note is found, the file is indexed, or reported with
    its last good version kept, or -- a JSON file that is no export -- passed over."""
    (root / "control.md").write_text("# Control\n\nzqcontrol stays findable.\n")
    target = _layout(root, name, good if good is not None else bad)
    conn = _new_index(root.parent / "f.db")
    try:
        before: list[tuple[Any, ...]] = []
        if good is not None:
            index_paths(conn, [root])
            before = _rows(conn, target)
            target.write_bytes(bad)
            os.utime(target, ns=(0, os.stat(target).st_mtime_ns + 10**9))  # a new stat, always
        report = index_paths(conn, [root])
        outcome = _outcome(conn, report, target, bad)
        if outcome == "skipped":
            assert _rows(conn, target) == before, "the last good version was not kept"
        if outcome == "passed over" and before:
            outcome = "passed over, last good version dropped"
        assert [h.path for h in search(conn, "zqcontrol").hits] == [str(root / "control.md")]
        assert db.check(conn) == []
        return outcome
    finally:
        conn.close()


@pytest.mark.slow
@settings(FUZZ, max_examples=250)
@given(name=st.sampled_from(sorted(SEED_FILES)), data=st.binary(max_size=4096))
def test_any_bytes_as_a_source_file(name: str, data: bytes) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "root").mkdir()
        outcome = _check_run(Path(tmp) / "root", name, data, None)
    event(outcome)
    assert outcome in ("indexed", "skipped", "passed over")


@pytest.mark.slow
@settings(FUZZ, max_examples=300)
@given(st.data())
def test_a_damaged_version_of_an_indexed_file_loses_nothing(
    seeds: dict[str, bytes], data: st.DataObject
) -> None:
    name = data.draw(st.sampled_from(sorted(seeds)))
    bad = data.draw(damaged(seeds[name]))
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "root").mkdir()
        outcome = _check_run(Path(tmp) / "root", name, bad, seeds[name])
    event(outcome)
    # A chat export damaged until it no longer looks like one is reported, its last good
    # version kept (see test_an_emptied_export_keeps_its_conversations): nothing is dropped.
    assert outcome in ("indexed", "skipped")


# Found by `scripts/reliability.py files`: each made the run raise (a recorded "memdex bug").
@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "data", "outcome"),
    [
        (
            "typo.memory.md",
            b"---\nid: t1\ncreated: 2025-09-42T09:15:00Z\ntitle: Typo\n---\nbody\n",
            "indexed",
        ),
        ("deep.memory.md", b"---\nx: " + b"[" * 5000 + b"\n---\nbody\n", "skipped"),
        ("deep.md", b"---\nx: " + b"[" * 5000 + b"\n---\nbody\n", "indexed"),  # a note: as text (#26)
        ("conversations.json", b'{"mapping": ' + b"[" * 5000, "skipped"),
    ],
    ids=[
        "impossible date in frontmatter",
        "frontmatter nested too deeply",
        "a note's frontmatter nested too deeply",
        "export nested too deeply",
    ],
)
def test_inputs_fuzzing_found(tmp_path: Path, name: str, data: bytes, outcome: str) -> None:
    (tmp_path / "root").mkdir()
    assert _check_run(tmp_path / "root", name, data, None) == outcome


def test_an_emptied_export_keeps_its_conversations(tmp_path: Path) -> None:
    "An export being rewritten is empty for a moment: that must not drop its conversations."
    (tmp_path / "root").mkdir()
    export = SEED_FILES["conversations.json"]().read_bytes()
    outcome = _check_run(tmp_path / "root", "conversations.json", b"", export)
    assert outcome == "skipped"


# -- a planted token is always found ----------------------------------------------------------
VOCABULARY = (
    "index query cache deploy rollback migration schema token budget latency queue worker retry "
    "branch merge conflict release pipeline runner fixture flaky timeout lock writer reader "
    "snapshot backup restore shard vacuum journal parser memory agent session context window"
).split()
lines = st.lists(
    st.builds(
        lambda words, prefix: prefix + " ".join(words),
        st.lists(st.sampled_from(VOCABULARY), min_size=1, max_size=14),
        st.sampled_from(["", "", "", "# ", "## ", "- ", "1. ", "> ", "| "]),
    ),
    min_size=1,
    max_size=30,
)
WRAPS = ["{}", "({})", "**{}**", "`{}`", "{}:", "{}-suffix", '"{}"', "[{}](x.md)", "{}."]


@st.composite
def corpora(draw: st.DrawFn) -> tuple[list[tuple[str, list[str]]], int, int, str]:
    "Files (name, lines), and where to plant a token: file, line and how it is written."
    count = draw(st.integers(1, 20))
    files = []
    for i in range(count):
        kind = draw(st.sampled_from(["note", "memory", "chat"]))
        name = {"note": f"n{i}.md", "memory": f"m{i}.memory.md", "chat": f"c{i}/conversations.json"}[kind]
        files.append((name, draw(lines)))
    which = draw(st.integers(0, count - 1))
    line = draw(st.integers(0, len(files[which][1]) - 1))
    return files, which, line, draw(st.sampled_from(WRAPS))


def _write(root: Path, name: str, body: list[str]) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if name.endswith(".memory.md"):
        path.write_text(
            f"---\nid: {path.stem}\ntitle: Memory {path.stem}\ntags: [x]\n---\n" + "\n".join(body) + "\n"
        )
    elif name.endswith(".json"):  # a Claude export: one conversation, a message per line
        messages = [
            {"uuid": f"u{i}", "sender": "human" if i % 2 == 0 else "assistant", "text": text,
             "created_at": f"2025-01-01T00:{i:02d}:00Z"}
            for i, text in enumerate(body)
        ]  # fmt: skip
        conversation = {
            "uuid": path.parent.name,
            "name": f"Chat {path.parent.name}",
            "chat_messages": messages,
        }
        path.write_text(json.dumps([conversation]))
    else:
        path.write_text("\n".join(body) + "\n")


@pytest.mark.slow
@settings(FUZZ, max_examples=80)
@given(corpus=corpora(), token=st.text("abcdefghijklmnopqrstuvwxyz", min_size=8, max_size=12))
def test_a_planted_token_is_always_found_in_its_file(
    corpus: tuple[list[tuple[str, list[str]]], int, int, str], token: str
) -> None:
    files, which, line, wrap = corpus
    token = "zq" + token  # no word of the vocabulary starts so
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "corpus"
        for i, (name, body) in enumerate(files):
            if i == which:
                body = body[:line] + [body[line] + " " + wrap.format(token)] + body[line + 1 :]
            _write(root, name, body)
        conn = db.connect(Path(tmp) / "t.db")
        try:
            report = index_paths(conn, [root])
            assert report.skipped == []
            name = files[which][0]
            event(name.rsplit(".", 1)[-1] if "." in name else name)
            hits = search(conn, token).hits
            assert [h.path for h in hits] == [str(root / name)]
            chunks = search(conn, token.upper(), granularity="chunk").hits
            assert chunks and all(
                token in (h.snippet + " ").lower().replace("«", "").replace("»", "") for h in chunks
            )
            if not name.endswith(".json"):  # where to read: the line range holds the token
                text = (root / name).read_text().splitlines()
                hit = hits[0]
                assert hit.line_start is not None and hit.line_end is not None
                assert any(token in t for t in text[hit.line_start - 1 : hit.line_end])
        finally:
            conn.close()
