"""A command line run inside the server as its caller would run it in-process.

The served commands read process-wide state: the working folder (relative paths), the
environment ($MEMDEX_NOW, Claude's key and model, $TZ...) and ``sys.stdout``/``sys.stderr``.
So a command line runs with its caller's folder and environment in place, under the gate
held whole, while HTTP and MCP requests (which read neither) share it; and what it prints
goes to a recording of its own thread, never the server's streams. Holding the gate whole
costs little: searches are Python, one at a time under the GIL anyway.
"""

from __future__ import annotations

import io
import os
import sys
import threading
import time
import traceback
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

from memdex.doors.serve.client import relevant

if TYPE_CHECKING:
    from memdex.query.engine import Engine


class Gate:
    "A readers-writer lock that lets a waiting writer in before new readers."

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._readers = 0
        self._writing = False
        self._waiting = 0

    @contextmanager
    def shared(self) -> Iterator[None]:
        with self._cond:
            while self._writing or self._waiting:
                self._cond.wait()
            self._readers += 1
        try:
            yield
        finally:
            with self._cond:
                self._readers -= 1
                self._cond.notify_all()

    @contextmanager
    def whole(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            while self._writing or self._readers:
                self._cond.wait()
            self._waiting -= 1
            self._writing = True
        try:
            yield
        finally:
            with self._cond:
                self._writing = False
                self._cond.notify_all()


class _Recording(threading.local):
    chunks: list[list[Any]] | None = None  # [stream (1 or 2), text], in the order written
    tty: tuple[bool, bool] = (False, False)


_recording = _Recording()


class Routed:
    """Stands in for ``sys.stdout`` or ``sys.stderr``: text written by a thread that records
    goes to its recording, anything else to the real stream. It writes text only, as a text
    stream must (click asks, to tell text streams from binary ones)."""

    encoding = "utf-8"
    errors = "strict"

    def __init__(self, real: TextIO, stream: int) -> None:
        self.real = real
        self.stream = stream

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        chunks = _recording.chunks
        if chunks is None:
            return self.real.write(text)
        if chunks and chunks[-1][0] == self.stream:
            chunks[-1][1] += text
        else:
            chunks.append([self.stream, text])
        return len(text)

    def flush(self) -> None:
        if _recording.chunks is None:
            self.real.flush()

    def isatty(self) -> bool:
        if _recording.chunks is None:
            return self.real.isatty()
        return _recording.tty[self.stream - 1]

    def fileno(self) -> int:
        if _recording.chunks is not None:
            raise OSError("a recorded stream has no file descriptor")
        return self.real.fileno()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.real, name)


def route_output() -> None:
    "Put Routed streams in place of sys.stdout and sys.stderr, once, before any caller runs."
    if not isinstance(sys.stdout, Routed):
        sys.stdout = Routed(sys.stdout, 1)  # type: ignore[assignment]
    if not isinstance(sys.stderr, Routed):
        sys.stderr = Routed(sys.stderr, 2)  # type: ignore[assignment]


@contextmanager
def as_caller(
    gate: Gate, cwd: str, env: dict[str, str], tty: tuple[bool, bool], stdin: str = ""
) -> Iterator[list[list[Any]]]:
    """The caller's folder, environment and stdin (what it piped, else nothing: never the
    server's own) in place, the gate held whole, and what this thread prints recorded
    (yielded: [stream, text] chunks); all put back after."""
    with gate.whole():
        saved_cwd, saved_stdin = os.getcwd(), sys.stdin
        names = {n for n in os.environ if relevant(n)} | set(env)
        saved = {n: os.environ.get(n) for n in names}
        os.chdir(cwd)
        try:
            _set_env({n: env.get(n) for n in names})
            _recording.chunks, _recording.tty = [], tty
            sys.stdin = io.StringIO(stdin)
            yield _recording.chunks
        finally:
            sys.stdin = saved_stdin
            _recording.chunks = None
            _set_env(saved)
            os.chdir(saved_cwd)


def _set_env(values: dict[str, str | None]) -> None:
    tz = os.environ.get("TZ")
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    if os.environ.get("TZ") != tz:
        time.tzset()  # local dates follow the caller's time zone


def run_command(argv: list[str], engine: Engine | None = None) -> int:
    """``memdex ARGV`` through the click group, as ``main()`` runs it, searching with the
    server's ``engine``: its exit code. A bug prints its traceback and exits 1, as Python does."""
    from memdex.doors.cli import cli

    try:
        cli.main(args=argv, prog_name="memdex", standalone_mode=True, obj=engine)
    except SystemExit as done:
        if done.code is None or isinstance(done.code, int):
            return done.code or 0
        print(done.code, file=sys.stderr)
        return 1
    except Exception:  # the server's boundary: the caller sees what an in-process run shows
        traceback.print_exc()
        return 1
    return 0
