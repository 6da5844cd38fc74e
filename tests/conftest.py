"""Shared fixtures: real SQLite files under tmp_path, real corpora, no mocks.

Every test runs with MEMDEX_DB and XDG_DATA_HOME pointing into its own tmp_path and
XDG_CACHE_HOME into the session's (so nothing can touch a developer's index or cache; a test
of the cache itself takes ``own_cache``) and with MEMDEX_RAISE_ERRORS set,
so a parser bug shows up as a failing test instead of a recorded "unexpected error".

../shared (real corpora and a model, written outside this project) is only read: a test that
needs a writable file copies it, the model is read from a copy of the session's own
(``minilm``), and the session fails if any file under ../shared/data changed. Without
../shared, the tests that need it skip, saying so, and the rest run.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import pytest

import memdex
from memdex.ingest.pipeline import index_paths
from memdex.store import db

REPO = Path(__file__).resolve().parent.parent
# Words only after `memdex index` and in watchers, unless a test asks for vectors
# (tests/test_meaning_default.py): embedding every small corpus would double the suite. Set for
# the whole session, not per test: a module's server or watcher starts before a test's own
# environment, and its background embedding would race the test's searches.
os.environ["MEMDEX_INDEX_SEMANTIC"] = "0"
SHARED_DATA = Path(os.environ.get("MEMDEX_SHARED_DATA", REPO.parent / "shared" / "data")).resolve()
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SAMPLE = REPO / "memdex" / "sample-corpus"


def pytest_report_header(config: pytest.Config) -> str:
    return f"memdex {memdex.__version__}, SQLite {sqlite3.sqlite_version}, shared data: {SHARED_DATA}"


@pytest.fixture(scope="session")
def session_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The session's cache folder (XDG_CACHE_HOME): what memdex derives from a model (its weights
    arranged at int8 and fp32, its vocabulary; keyed by the model's own bytes) is made once a
    session, not once a test -- 52 MB and a second of CPU each time."""
    return tmp_path_factory.mktemp("xdg-cache")


@pytest.fixture
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    "An empty cache folder of the test's own, for a test of what memdex keeps there."
    path = tmp_path / "xdg-cache"
    monkeypatch.setenv("XDG_CACHE_HOME", str(path))
    return path


@pytest.fixture(autouse=True)
def isolated_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, session_cache: Path) -> None:
    monkeypatch.setenv("MEMDEX_DB", str(tmp_path / "env-default.db"))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(session_cache))  # the model's derived files: own_cache
    monkeypatch.setenv("MEMDEX_RAISE_ERRORS", "1")
    # No progress lines in what a test reads unless it asks (tests/test_progress.py does).
    monkeypatch.setenv("MEMDEX_PROGRESS_SECONDS", "3600")
    monkeypatch.delenv("MEMDEX_IGNORE", raising=False)
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "MEMDEX_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def no_leaked_threads() -> Iterator[None]:
    "Any test that leaves a thread running fails (watchdog's own suite does the same)."
    before = {t.ident for t in threading.enumerate()}
    yield
    leaked = [t for t in threading.enumerate() if t.ident not in before and t.is_alive()]
    for t in leaked:
        t.join(timeout=5)
    still = [t.name for t in leaked if t.is_alive()]
    assert not still, f"threads leaked by the test: {still}"


# CI sets it: there, a missing ../shared is a broken checkout, not a reason to skip.
REQUIRE_SHARED_ENV = "MEMDEX_REQUIRE_SHARED"


def claude_export(folder: Path, talks: dict[str, tuple[datetime, list[str]]], minutes: int = 2) -> Path:
    """A Claude export in ``folder``: for each conversation (uuid -> its start and its messages'
    texts) the person's and the assistant's messages in turn, the person's first, ``minutes``
    apart; each named "Talk <uuid>"."""
    conversations = []
    for uuid, (start, texts) in talks.items():
        messages = [
            {
                "uuid": f"{uuid}-{i}",
                "sender": "human" if i % 2 == 0 else "assistant",
                "text": text,
                "created_at": (start + timedelta(minutes=minutes * i)).isoformat(),
            }
            for i, text in enumerate(texts)
        ]
        conversations.append(
            {
                "uuid": uuid,
                "name": f"Talk {uuid}",
                "created_at": messages[0]["created_at"],
                "updated_at": messages[-1]["created_at"],
                "chat_messages": messages,
            }
        )
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "conversations.json").write_text(json.dumps(conversations))
    return folder


def shared(*parts: str) -> Path:
    "A path under ../shared/data; the test skips (fails, under $MEMDEX_REQUIRE_SHARED) when it is missing."
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        why = f"{path} is missing: this test reads ../shared/data, the real corpora checked out beside the repository"
        if os.environ.get(REQUIRE_SHARED_ENV):
            pytest.fail(why)
        pytest.skip(why)
    return path


def _listing(root: Path) -> dict[str, tuple[int, int, int]]:
    "Every path under ``root`` with its mode, size and modification time"
    found = {}
    for path in [root, *root.rglob("*")] if root.exists() else []:
        stat = path.lstat()
        found[str(path.relative_to(root))] = (stat.st_mode, stat.st_size, stat.st_mtime_ns)
    return found


@pytest.fixture(scope="session", autouse=True)
def shared_stays_unchanged() -> Iterator[None]:
    """Tests never write into ../shared: not even where they may (a writable copy, or root,
    whom a read-only folder does not stop). Any file added, removed or changed fails the session."""
    before = _listing(SHARED_DATA)
    yield
    after = _listing(SHARED_DATA)
    changed = sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))
    assert not changed, f"tests wrote into {SHARED_DATA}: {changed[:20]}"


MINILM = "all-MiniLM-L6-v2"


@pytest.fixture(scope="session")
def minilm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """../shared's all-MiniLM-L6-v2, copied once a session into a folder whose mode makes it
    read-only: memdex keeps what it derives from the model (its arranged weights, its vocabulary)
    in its cache folder (XDG_CACHE_HOME, the session's), never beside the model -- the same
    whether ../shared is read-only or not (model.derived_places)."""
    folder = tmp_path_factory.mktemp("models") / MINILM
    shutil.copytree(shared("models", MINILM), folder)
    folders = [folder, *(path for path in folder.rglob("*") if path.is_dir())]
    for path in folders:
        path.chmod(0o555)
    yield folder.resolve()
    for path in folders:
        path.chmod(0o755)  # so that pytest can remove it, whoever runs it


def search_in_a_new_process(db_path: Path, query: str, *report: str) -> tuple[dict[str, object], list[str]]:
    """``memdex search QUERY --json`` as a one-shot command runs it (a process of its own, no
    server), then the ``report`` lines of Python in that process: (its JSON, what they printed)."""
    probe = "\n".join(
        [
            "import re, sys",
            f"sys.argv = ['memdex', '--db', {str(db_path)!r}, 'search', {query!r}, '--json']",
            "from memdex.doors.main import main",
            "try:",
            "    main()",
            "except SystemExit as end:",
            "    assert not end.code, end.code",
            "print('-- report --')",
            *report,
        ]
    )
    env = {**os.environ, "MEMDEX_NO_SERVER": "1"}
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    shown, _, printed = done.stdout.partition("-- report --\n")
    return json.loads(shown), printed.splitlines()


@pytest.fixture(scope="session")
def shared_data() -> Path:
    "../shared/data: real corpora written outside this project (see its SOURCES.md)."
    return shared()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "memdex.db"


@pytest.fixture
def conn(db_path: Path) -> Iterator[sqlite3.Connection]:
    connection = db.connect(db_path)
    yield connection
    connection.close()


@pytest.fixture(scope="session")
def serena_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    "The nested Serena corpus, indexed once for the session. Tests must not write to it."
    path = tmp_path_factory.mktemp("serena") / "serena.db"
    connection = db.connect(path)
    index_paths(connection, [shared("serena-memories")])
    connection.close()
    return path


@pytest.fixture
def serena(serena_db: Path) -> Iterator[sqlite3.Connection]:
    connection = db.connect(serena_db)
    yield connection
    connection.close()


# When every file of a sample copy was last modified: a document with no date of its own is
# dated by it, so a copy made in October must not join the October listing (issue 26).
SAMPLE_MTIME = 1768469400  # 2026-01-15T09:30:00Z, after every date the sample holds


@pytest.fixture
def sample_copy(tmp_path: Path) -> Path:
    "A writable copy of the sample corpus shipped in the package, every file's mtime SAMPLE_MTIME."
    target = tmp_path / "sample"
    shutil.copytree(SAMPLE, target, ignore=shutil.ignore_patterns("__pycache__", "README.txt"))
    for path in target.rglob("*"):
        if path.is_file():
            os.utime(path, (SAMPLE_MTIME, SAMPLE_MTIME))
    return target


@pytest.fixture
def sample(conn: sqlite3.Connection, sample_copy: Path) -> sqlite3.Connection:
    "The sample corpus indexed as `memdex demo` does: four roots."
    index_paths(conn, [sample_copy / name for name in ("memories", "serena", "notes", "chats")])
    return conn
