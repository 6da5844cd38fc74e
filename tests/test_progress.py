"""Progress of long work on any stream (memdex/doors/progress.py): `memdex index` and `memdex
embed` run as commands of their own, their stderr a pipe (as in a log or CI) or a terminal.

Previously a command whose stderr was no terminal showed nothing: 3,821 chunks embedded in
5 min 08 s left no line in a log. The interval between lines is $MEMDEX_PROGRESS_SECONDS, so
these runs cross it without sleeping."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.doors.progress import INTERVAL_ENV, Progress, duration

LINE = re.compile(
    r"(?P<label>Indexing|Embedding): (?P<done>[\d,]+) of (?P<total>[\d,]+) (?P<unit>files|chunks) "
    r"\((?P<percent>\d+)%\), (?:(?P<rate>[\d.,]+(?:e-\d+)?) (?:files|chunks)/s, )?"
    r"(?:about (?P<left>.+) left|done in (?P<took>.+))"
)
DURATION = re.compile(r"\d+ s|\d+ min \d+ s|\d+ h \d+ min")


def notes(folder: Path, count: int) -> Path:
    "``count`` notes of one short chunk each"
    folder.mkdir()
    for i in range(count):
        (folder / f"note-{i:04}.md").write_text(
            f"# Note {i}\n\nThe deploy key {i} was rotated after outage {i}.\n"
        )
    return folder


def memdex(
    db_path: Path, *args: str, seconds: str = "0", stderr: int | None = subprocess.PIPE
) -> subprocess.CompletedProcess[str]:
    "The `memdex` command in a process of its own (no server), its stderr a pipe unless given"
    env = {**os.environ, "MEMDEX_NO_SERVER": "1", INTERVAL_ENV: seconds}
    return subprocess.run(
        [sys.executable, "-m", "memdex", "--db", str(db_path), *args],
        stdout=subprocess.PIPE,
        stderr=stderr,
        text=True,
        env=env,
        timeout=300,
    )


def progress_lines(stderr: str, label: str, unit: str, total: int) -> list[re.Match[str]]:
    "Every stderr line, each a progress line of this count: its numbers add up, the last says it is done"
    found = [LINE.fullmatch(line) for line in stderr.splitlines()]
    assert found and all(found), stderr[-2000:]
    matches = [m for m in found if m]
    done = [int(m["done"].replace(",", "")) for m in matches]
    for m, count in zip(matches, done, strict=True):
        assert (m["label"], m["unit"], int(m["total"].replace(",", ""))) == (label, unit, total)
        assert int(m["percent"]) == count * 100 // total
        assert DURATION.fullmatch(m["left"] or m["took"]), m[0]
    assert done == sorted(done) and done[-1] == total
    assert matches[-1]["took"] and not any(m["took"] for m in matches[:-1])
    return matches


@pytest.mark.slow
def test_index_and_embed_show_progress_lines_on_a_pipe(tmp_path: Path, minilm: Path) -> None:
    "Each line: done of total, percent, rate and time left; the last says how long it took"
    pytest.importorskip("numpy")
    db_path = tmp_path / "memdex.db"
    folder = notes(tmp_path / "notes", 300)
    indexed = memdex(db_path, "index", str(folder))
    assert indexed.returncode == 0, indexed.stderr
    assert "300 files: 300 added" in indexed.stdout  # the summary, on stdout as before
    lines = progress_lines(indexed.stderr, "Indexing", "files", 300)
    assert len(lines) > 2 and all(m["rate"] for m in lines[1:])
    embedded = memdex(db_path, "embed", "--model", str(minilm))
    assert embedded.returncode == 0, embedded.stderr
    assert "300 chunks embedded" in embedded.stdout
    lines = progress_lines(embedded.stderr, "Embedding", "chunks", 300)
    assert [int(m["done"]) for m in lines] == [256, 300]  # a line a batch of 256, at interval 0


@pytest.mark.slow
def test_index_quiet_shows_no_progress(tmp_path: Path) -> None:
    indexed = memdex(tmp_path / "memdex.db", "index", "--quiet", str(notes(tmp_path / "notes", 300)))
    assert (indexed.returncode, indexed.stdout, indexed.stderr) == (0, "", "")


@pytest.mark.slow
def test_embed_quiet_shows_no_progress(tmp_path: Path, minilm: Path) -> None:
    pytest.importorskip("numpy")
    db_path = tmp_path / "memdex.db"
    assert memdex(db_path, "index", "--quiet", str(notes(tmp_path / "notes", 300))).returncode == 0
    embedded = memdex(db_path, "embed", "--quiet", "--model", str(minilm))
    assert (embedded.returncode, embedded.stdout, embedded.stderr) == (0, "", "")
    assert memdex(db_path, "embed", "-q", "--model", str(minilm), "--json").stdout.startswith("{")


def test_a_run_shorter_than_the_interval_shows_nothing(tmp_path: Path) -> None:
    indexed = memdex(tmp_path / "memdex.db", "index", str(notes(tmp_path / "notes", 20)), seconds="600")
    assert indexed.returncode == 0 and indexed.stderr == ""


@pytest.mark.slow
def test_on_a_terminal_one_line_is_redrawn(tmp_path: Path) -> None:
    "stderr a terminal (a pseudo-terminal here): each state over the last, one line ended at the end"
    pty = pytest.importorskip("pty")
    leader, follower = pty.openpty()
    try:
        indexed = memdex(
            tmp_path / "memdex.db", "index", str(notes(tmp_path / "notes", 150)), stderr=follower
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # Linux: EIO once the writer is gone and all is read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    assert indexed.returncode == 0
    text = shown.decode().replace("\r\n", "\n")  # the terminal's own newline
    assert text.count("\n") == 1 and text.endswith("\n") and text.count("\r") > 2
    states = [state.rstrip() for state in text.strip("\n").split("\r") if state]
    assert states and all(LINE.fullmatch(state) for state in states), states[:3]
    assert states[-1].startswith("Indexing: 150 of 150 files (100%)") and "done in" in states[-1]


def test_lines_come_by_the_clock_not_by_the_count(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    "Reports every 0.1 s over a minute, at an interval of 5 s: a line each 5 s, the rate and time left from them"
    monkeypatch.delenv(INTERVAL_ENV)
    now = [100.0]
    progress = Progress("Embedding", "chunks", terminal=False, clock=lambda: now[0])
    for done in range(1, 601):
        now[0] = 100 + done / 10
        progress(done, 600)
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 11 + 1  # at 5, 10 ... 55 s, and the last
    assert lines[0] == "Embedding: 50 of 600 chunks (8%), 10.0 chunks/s, about 55 s left"
    assert lines[-2] == "Embedding: 550 of 600 chunks (91%), 10.0 chunks/s, about 5 s left"
    assert lines[-1] == "Embedding: 600 of 600 chunks (100%), 10.0 chunks/s, done in 1 min 0 s"


def test_a_bad_interval_is_named(tmp_path: Path) -> None:
    result = CliRunner().invoke(
        cli,
        ["--db", str(tmp_path / "memdex.db"), "index", str(notes(tmp_path / "notes", 2))],
        env={INTERVAL_ENV: "soon"},
    )
    assert result.exit_code == 2
    assert f"{INTERVAL_ENV}='soon' is not a number of seconds" in result.output


def test_durations_read_as_people_say_them() -> None:
    assert [duration(s) for s in (0.4, 42, 226, 3600, 7500)] == [
        "0 s",
        "42 s",
        "3 min 46 s",
        "1 h 0 min",
        "2 h 5 min",
    ]


@pytest.mark.slow
def test_a_closed_or_broken_stderr_never_fails_the_work(tmp_path: Path) -> None:
    "Review of #38: `2>&-` raised AttributeError; a reader gone (`| head -1`) failed on EPIPE."
    corpus = notes(tmp_path / "notes", 40)
    closed = memdex(tmp_path / "closed.db", "index", str(corpus), stderr=subprocess.DEVNULL)
    assert closed.returncode == 0
    env = {**os.environ, "MEMDEX_NO_SERVER": "1", INTERVAL_ENV: "0"}
    command = [sys.executable, "-m", "memdex", "--db", str(tmp_path / "closed2.db"), "index", str(corpus)]
    shut = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, timeout=300,
                          close_fds=True, preexec_fn=lambda: os.close(2))  # fmt: skip
    assert shut.returncode == 0, shut
    reader = subprocess.Popen(command[:4] + [str(tmp_path / "piped.db"), "index", str(corpus)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)  # fmt: skip
    assert reader.stderr is not None
    reader.stderr.readline()  # the first progress line, then the reader goes away
    reader.stderr.close()
    out, _ = reader.communicate(timeout=300)
    assert reader.returncode == 0
    assert b"40 documents written" in out
    assert memdex(tmp_path / "piped.db", "status").stdout.splitlines()[1].startswith("40 documents,")
