"""Progress of long work on stderr (`memdex index`, `memdex embed`), whatever stderr is.

On a terminal, one line redrawn in place. Anywhere else (a log file, CI, a pipe) a plain line
every few seconds -- by the clock, not by a count, so a slow machine writes no more lines than a
fast one. Each line says how much of the total is done, the rate so far and about how long the
rest will take; a run that showed any line ends with one that says how long it took. A run
shorter than the interval shows nothing.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from memdex.errors import InvalidParameter

INTERVAL_ENV = "MEMDEX_PROGRESS_SECONDS"
INTERVAL = 5.0  # seconds between two lines in a log: a 5-minute run writes about 60
REDRAW = 0.2  # seconds between two redraws on a terminal
FIRST_DRAW = 1.0  # a terminal shows nothing for work done within a second


def interval() -> float:
    "Seconds between two lines in a log: $MEMDEX_PROGRESS_SECONDS, else INTERVAL"
    given = os.environ.get(INTERVAL_ENV, "").strip()
    if not given:
        return INTERVAL
    try:
        seconds = float(given)
    except ValueError:
        seconds = -1.0
    if not 0 <= seconds < float("inf"):
        raise InvalidParameter(
            f"{INTERVAL_ENV}={given!r} is not a number of seconds: set it to one (e.g. 5), or unset it."
        )
    return seconds


def duration(seconds: float) -> str:
    "``42 s``, ``3 min 46 s``, ``2 h 5 min``"
    whole = round(seconds)
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60} s"
    return f"{whole // 3600} h {whole % 3600 // 60} min"


def rate(per_second: float) -> str:
    "``1,234``, ``12.4``, ``0.42``: as many digits as say something"
    if per_second >= 100:
        return f"{per_second:,.0f}"
    if per_second >= 1:
        return f"{per_second:.1f}"
    return f"{per_second:.2g}"


class Progress:
    """``progress(done, total)`` as the library calls it, shown on stderr.

    A new total (`memdex index` counts each root's files on its own) starts a new count, its
    rate measured from where the last one ended."""

    def __init__(
        self,
        label: str,
        unit: str,
        *,
        terminal: bool | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.label, self.unit, self.clock = label, unit, clock
        self.terminal = _isatty() if terminal is None else terminal
        self.broken = sys.stderr is None  # stderr closed (2>&-), or its reader gone: say nothing more
        every = interval()
        self.every = min(REDRAW, every) if self.terminal else every
        self.first = min(FIRST_DRAW, every) if self.terminal else every
        self.started = self.clock()
        self.total: int | None = None
        self.shown: float | None = None  # when the last line of this total was shown
        self.first_told: tuple[float, int] | None = None  # when the library first told, and how much
        self.width = 0  # the length of the line drawn on the terminal

    def __call__(self, done: int, total: int) -> None:
        now = self.clock()
        if total != self.total:
            if self.total is not None:  # the last count stopped short: this one starts now
                self.started = now
            self._end_line()
            self.total, self.shown, self.first_told = total, None, (now, done)
        elapsed = now - self.started
        if done >= total:
            if self.shown is not None or now >= self.started + self.first:  # long, if told only now
                speed = f"{rate(done / elapsed)} {self.unit}/s, " if elapsed > 0 else ""
                self._write(f"{self._counts(done, total)}, {speed}done in {duration(elapsed)}")
                self._end_line()
            self.started, self.total, self.shown = now, None, None
            return
        due = self.started + self.first if self.shown is None else self.shown + self.every
        if now < due:
            return
        self.shown = now
        line = self._counts(done, total)
        told, done_then = self.first_told or (self.started, 0)
        if done > done_then and now > told:  # the rate since the first report: start-up left out
            per_second = (done - done_then) / (now - told)
        else:
            per_second = done / elapsed if elapsed > 0 else 0.0
        if per_second > 0:
            line += f", {rate(per_second)} {self.unit}/s, about {duration((total - done) / per_second)} left"
        self._write(line)

    def _counts(self, done: int, total: int) -> str:
        return f"{self.label}: {done:,} of {total:,} {self.unit} ({done * 100 // max(total, 1)}%)"

    def _write(self, line: str) -> None:
        if self.terminal:  # over the last line, its leftovers blanked
            self._say("\r" + line.ljust(self.width))
            self.width = len(line)
        else:
            self._say(line + "\n")

    def _say(self, text: str) -> None:
        "Write to stderr; progress is never worth failing the work for (a closed or broken pipe)."
        if self.broken:
            return
        try:
            sys.stderr.write(text)
            sys.stderr.flush()
        except (OSError, ValueError):  # EPIPE, or a closed file
            self.broken = True

    def end(self) -> None:
        "The work is over: a line drawn on the terminal is left as it is, the cursor after it"
        self._end_line()

    def _end_line(self) -> None:
        if self.terminal and self.width:
            self._say("\n")
            self.width = 0


def _isatty() -> bool:
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except ValueError:  # closed
        return False


@contextmanager
def shown(label: str, unit: str, quiet: bool = False) -> Iterator[Progress | None]:
    """What a command hands the library as its ``progress`` while it runs (None when quiet);
    a line still drawn on the terminal is ended when it returns or fails."""
    if quiet:
        yield None
        return
    progress = Progress(label, unit)
    try:
        yield progress
    finally:
        progress.end()
