"""memdex serve and its thin client: a real server process on a real socket, the real
`python -m memdex` command line, and the same output whether the server answers or not."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.doors.serve import client
from memdex.ingest.pipeline import index_paths
from memdex.store import db

from .conftest import SAMPLE, SAMPLE_MTIME
from .test_watcher import wait_until


@dataclass
class Served:
    db: Path
    corpus: Path
    proc: subprocess.Popen[bytes]
    log: Path


def server_env(**extra: str) -> dict[str, str]:
    "The environment a server runs with: this one, bugs raised, nothing ignored."
    env = {k: v for k, v in os.environ.items() if k != "MEMDEX_IGNORE"}
    return {**env, "MEMDEX_RAISE_ERRORS": "1", **extra}


def start_server(db_path: Path, *args: str, env: dict[str, str] | None = None) -> Served:
    "memdex serve in its own process; returns once it answers and its warm-up is done."
    log = Path(f"{db_path}.serve-log")
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memdex", "--db", str(db_path), "serve", *args],
            stderr=out,
            env=env or server_env(),
        )

    def ready() -> bool:
        assert proc.poll() is None, log.read_text()
        state = client.ping(str(db_path))
        return bool(state and state.get("warm"))

    try:
        wait_until(ready, timeout=60)
    except BaseException:
        proc.kill()
        proc.wait(10)
        raise
    return Served(db_path, db_path.parent / "sample", proc, log)


def stop_server(served: Served) -> int:
    if served.proc.poll() is None:
        served.proc.send_signal(signal.SIGTERM)
    return served.proc.wait(30)


def sample_index(folder: Path) -> Path:
    corpus = folder / "sample"
    shutil.copytree(SAMPLE, corpus, ignore=shutil.ignore_patterns("__pycache__", "README.txt"))
    for path in corpus.rglob("*"):
        if path.is_file():
            os.utime(path, (SAMPLE_MTIME, SAMPLE_MTIME))
    db_path = folder / "m.db"
    conn = db.connect(db_path)
    index_paths(conn, [corpus / name for name in ("memories", "serena", "notes", "chats")])
    conn.close()
    return db_path


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    "One server for the module, on the sample corpus; searches only (one test adds a note)."
    server = start_server(sample_index(tmp_path_factory.mktemp("served")))
    yield server
    assert stop_server(server) == 0, server.log.read_text()


def memdex(
    db_path: Path, *args: str, served: bool = True, cwd: Path | None = None, **env: str
) -> tuple[int, str, str]:
    "`python -m memdex --db DB ARGS`: (exit code, stdout, stderr); served=False runs in-process."
    full = {**os.environ, **env}
    if not served:
        full[client.NO_SERVER_ENV] = "1"
    done = subprocess.run(
        [sys.executable, "-m", "memdex", "--db", str(db_path), *args],
        capture_output=True,
        text=True,
        env=full,
        cwd=cwd,
        timeout=120,
    )
    return done.returncode, done.stdout, done.stderr


def without_timings(text: str) -> str:
    return re.sub(r'"ms": [0-9.e-]+|in \d+ ms', "<ms>", text)


def served_count(db_path: Path) -> tuple[int, int]:
    state = client.ping(str(db_path)) or {}
    requests = state.get("requests", {})
    return requests.get("cli", 0), requests.get("fallback", 0)


@pytest.mark.slow
@pytest.mark.parametrize(
    "args",
    [
        ("search", "postgres billing"),
        ("search", "watcher", "--granularity", "chunk", "--limit", "3", "--json", "--full"),
        ("search", "October 2025", "--json"),
        ("show", "1", "--lines", "2-4"),
        ("show", "no-such-document"),  # exit 1, Error: on stderr
        ("search", "x", "--limit", "0"),  # exit 2, usage
    ],
)
def test_the_same_output_served_or_in_process(served: Served, args: tuple[str, ...]) -> None:
    "The served command line against the CLI run here (the server stopped: see the kill -9 test)."
    before = served_count(served.db)
    answered = memdex(served.db, *args)
    assert served_count(served.db) == (before[0] + 1, before[1]), "the server did not answer it"
    alone = CliRunner().invoke(cli, ["--db", str(served.db), *args], prog_name="memdex")
    assert answered[0] == alone.exit_code
    assert without_timings(answered[1]) == without_timings(alone.stdout)
    assert answered[2] == alone.stderr
    assert answered[1] or answered[2]


@pytest.mark.slow
def test_the_session_start_hook_is_served_with_what_it_read_on_stdin(served: Served) -> None:
    "The agents' hook (`context --hook`) reads Claude Code's JSON on stdin: the server gets it."
    hook = json.dumps({"session_id": "s", "cwd": str(served.db.parent / "sample"), "source": "startup"})
    before = served_count(served.db)
    done = subprocess.run(
        [sys.executable, "-m", "memdex", "--db", str(served.db), "context", "--hook"],
        input=hook,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert served_count(served.db) == (before[0] + 1, before[1]), "the server did not answer it"
    alone = CliRunner().invoke(cli, ["--db", str(served.db), "context", "--hook"], input=hook)
    assert (done.returncode, done.stdout) == (alone.exit_code, alone.stdout)
    assert "sample" in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    # No server for this index: the client read stdin for nothing, and puts it back.
    alone_db = served.db.parent / "unserved.db"
    with sqlite3.connect(served.db) as source, sqlite3.connect(alone_db) as copy:
        source.backup(copy)
    unserved = subprocess.run(
        [sys.executable, "-m", "memdex", "--db", str(alone_db), "context", "--hook"],
        input=hook,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert unserved.stdout.replace(str(alone_db), str(served.db)) == done.stdout


@pytest.mark.slow
def test_the_callers_folder_and_environment_are_the_commands(served: Served, tmp_path: Path) -> None:
    "A relative path resolves in the caller's folder; $MEMDEX_NOW pins the caller's today."
    folder = served.corpus / "notes"
    name = sorted(p.name for p in folder.iterdir())[0]
    before = served_count(served.db)
    answered = memdex(served.db, "show", name, "--json", cwd=folder)
    alone = memdex(served.db, "show", name, "--json", cwd=folder, served=False)
    assert answered == alone and answered[0] == 0
    pinned = memdex(served.db, "search", "last month", "--json", MEMDEX_NOW="2025-11-20")
    alone = memdex(served.db, "search", "last month", "--json", served=False, MEMDEX_NOW="2025-11-20")
    assert without_timings(pinned[1]) == without_timings(alone[1])
    assert '"2025-10-01"' in pinned[1]
    assert served_count(served.db) == (before[0] + 2, before[1])
    # an output file lands where the caller meant, relative to its folder
    code, _, err = memdex(served.db, "search", "billing", "--output-file", "out.md", cwd=tmp_path)
    assert code == 0 and "PostgreSQL" in (tmp_path / "out.md").read_text(), err


@pytest.mark.slow
def test_a_caller_the_server_cannot_take_runs_in_process(served: Served) -> None:
    "Another model than the server's, or --batch from stdin: answered in-process, the same."
    before = served_count(served.db)
    other = {"MEMDEX_EMBED_MODEL": "/nowhere/model"}
    assert memdex(served.db, "search", "billing", **other) == memdex(
        served.db, "search", "billing", served=False, **other
    )
    assert served_count(served.db) == (before[0], before[1] + 1)
    batch = subprocess.run(
        [sys.executable, "-m", "memdex", "--db", str(served.db), "search", "--batch", "-"],
        input='{"query": "billing"}\n',
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert batch.returncode == 0 and "PostgreSQL" in batch.stdout
    assert served_count(served.db) == (before[0], before[1] + 1)


@pytest.mark.slow
def test_the_client_imports_neither_click_nor_sqlite_nor_numpy(served: Served) -> None:
    "The served path is the stdlib-only client: what makes a served search cheap."
    code = (
        "import sys; from memdex.doors.serve.client import forward; "
        f"rc = forward(['--db', {str(served.db)!r}, 'search', 'billing']); "
        "print(rc, sorted(m for m in ('click', 'sqlite3', 'numpy', 'memdex.store', 'memdex.doors.cli') if m in sys.modules), file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stderr.strip().splitlines()[-1] == "0 []"
    assert "PostgreSQL" in done.stdout


@pytest.mark.slow
def test_status_shows_the_server_and_the_watcher_in_it_keeps_the_index(served: Served) -> None:
    code, out, _ = memdex(served.db, "status")
    assert code == 0
    line = next(ln for ln in out.splitlines() if ln.startswith("Server:"))
    assert f"pid {served.proc.pid}" in line and str(client.socket_path(str(served.db))) in line
    assert "Watcher: running" in out
    note = served.corpus / "notes" / "kittiwake.md"
    note.write_text("# Kittiwakes\n\nThe kittiwake colony nests on the north cliff.\n")
    wait_until(lambda: "Kittiwakes" in memdex(served.db, "search", "kittiwake")[1], timeout=20)
    assert os.stat(client.socket_path(str(served.db))).st_mode & 0o777 == 0o600


@pytest.mark.slow
def test_one_server_per_index(served: Served) -> None:
    second = subprocess.run(
        [sys.executable, "-m", "memdex", "--db", str(served.db), "serve"],
        capture_output=True,
        text=True,
        timeout=60,
        env=server_env(),
    )
    assert second.returncode == 1
    assert f"memdex serve (pid {served.proc.pid}) already serves {served.db}" in second.stderr


@pytest.mark.slow
def test_killed_then_restarted_then_stopped_cleanly(tmp_path: Path) -> None:
    "kill -9 leaves a socket nobody answers: the CLI runs in-process; the next server takes it."
    db_path = sample_index(tmp_path)
    first = start_server(db_path, "--read-only")
    first.proc.kill()
    first.proc.wait(10)
    sock = Path(client.socket_path(str(db_path)))
    assert sock.exists()
    alone = [memdex(db_path, "search", "billing"), memdex(db_path, "search", "billing", "--json")]
    assert alone[0][0] == 0 and "PostgreSQL" in alone[0][1]
    second = start_server(db_path, "--read-only")
    try:
        served = [memdex(db_path, "search", "billing"), memdex(db_path, "search", "billing", "--json")]
        assert served[0] == alone[0]
        assert without_timings(served[1][1]) == without_timings(alone[1][1])
        assert client.ping(str(db_path))["requests"]["cli"] == 2  # type: ignore[index]
        # nothing keeps the index open between requests (Litestream's follow mode waits for that)
        fds = Path(f"/proc/{second.proc.pid}/fd")
        assert str(db_path) not in [os.path.realpath(fd) for fd in fds.iterdir()]
    finally:
        assert stop_server(second) == 0
    assert not sock.exists()
    assert "stopped serving" in second.log.read_text()
    status = memdex(db_path, "status")[1]
    assert re.search(r"^Server: not running \(last stopped \d{4}-", status, re.M), status


def test_serve_refuses_what_it_cannot_do_safely(tmp_path: Path) -> None:
    db_path = sample_index(tmp_path)
    runner = CliRunner()
    remote = runner.invoke(cli, ["--db", str(db_path), "serve", "--http", "--host", "0.0.0.0"])
    assert remote.exit_code == 2 and "--token-file" in remote.output
    short = tmp_path / "short-token"
    short.write_text("abc\n")
    weak = runner.invoke(cli, ["--db", str(db_path), "serve", "--http", "--token-file", str(short)])
    assert weak.exit_code == 2 and "16 or more characters" in weak.output
    replica = runner.invoke(cli, ["--db", str(tmp_path / "none.db"), "serve", "--read-only"])
    assert replica.exit_code == 1 and "No memdex index at" in replica.output


def test_install_prints_a_unit_with_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes").mkdir()
    token = tmp_path / "token"
    token.write_text("t" * 32)
    token.chmod(0o600)
    args = ["--db", "m.db", "serve", "notes", "--http", "--host", "10.0.0.5", "--token-file", "token"]
    result = CliRunner().invoke(cli, [*args, "--install", "systemd", "--log-file", "serve.log"])
    assert result.exit_code == 0, result.output
    exec_start = next(ln for ln in result.stdout.splitlines() if ln.startswith("ExecStart="))
    real = os.path.realpath(tmp_path)
    for part in (
        f"--db {real}/m.db serve {real}/notes",
        f"--token-file {real}/token",
        f"--log-file {real}/serve.log",
    ):
        assert part in exec_start
    assert "--host 10.0.0.5 --port 8765" in exec_start
    assert "memdex-serve.service" in result.stderr
    plist = CliRunner().invoke(cli, [*args, "--install", "launchd"])
    assert (
        "<string>io.memdex.serve</string>" in plist.stdout
        and f"<string>{real}/token</string>" in plist.stdout
    )


@pytest.mark.parametrize("given", [None, "relative/m.db", "~/x.db", "../up.db"])
def test_the_client_finds_the_index_the_cli_would(
    given: str | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for value in (str(tmp_path / "env.db"), ""):
        monkeypatch.setenv("MEMDEX_DB", value)
        assert client.index_path(given) == str(db.resolve_db_path(given))


def test_the_client_reads_only_what_it_needs_of_a_command_line() -> None:
    assert client.command_of(["--db", "x.db", "search", "q", "--json"]) == ("search", "x.db", ["q", "--json"])
    assert client.command_of(["--db=y.db", "show", "1"]) == ("show", "y.db", ["1"])
    assert client.command_of(["--version"]) == (None, None, [])
    assert client.command_of([]) == (None, None, [])
    assert client.forward(["index", "."]) is None  # not a served command: nothing is tried
    long = "/tmp/" + "d" * 120 + "/m.db"
    assert client.socket_path(long).endswith(".sock") and len(client.socket_path(long)) <= 100
