"""Small helpers every room shares: timestamps, dates, atomic writes, token budgets, running
until a signal.

One home for each, as sqlite-utils keeps its own in ``utils.py``: a second copy of any of
these is a bug waiting to disagree with the first.
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"  # every timestamp memdex writes: UTC to the second


def utc_stamp(moment: datetime | float | None = None) -> str:
    "A moment (a datetime, epoch seconds, or now) as ``2026-11-24T04:53:49Z``."
    if moment is None:
        return datetime.now(UTC).strftime(UTC_FORMAT)
    if isinstance(moment, datetime):
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        return moment.astimezone(UTC).strftime(UTC_FORMAT)
    return time.strftime(UTC_FORMAT, time.gmtime(moment))


def local_today() -> date:
    """Today's local date, or the ISO date in ``MEMDEX_NOW``, which pins "today" for tests and
    reproducible runs (relative dates in queries resolve against it)."""
    pinned = os.environ.get("MEMDEX_NOW", "").strip()
    if not pinned:
        return date.today()
    try:
        return datetime.fromisoformat(pinned.replace("Z", "+00:00")).date()
    except ValueError:
        from memdex.errors import InvalidParameter

        raise InvalidParameter(
            f"MEMDEX_NOW={pinned!r} is not an ISO date: set it to YYYY-MM-DD, or unset it for today."
        ) from None


def as_date(value: Any) -> str | None:
    """A date field as ISO 8601 -- a date stays a date, a datetime (or epoch seconds) becomes
    UTC to the second -- or None when it is not one ("last tuesday"): junk must not pass date
    filters. The raw value stays in the document's metadata."""
    if isinstance(value, bool):
        return None
    if isinstance(value, datetime):
        return utc_stamp(value)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, (int, float)):
        if not 0 < value < 4_102_444_800:  # 1970 to 2100
            return None
        return utc_stamp(float(value))
    if isinstance(value, str):
        text = value.strip()
        try:
            moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
        if len(text) == 10:
            return moment.date().isoformat()
        return utc_stamp(moment)
    return None


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


UMASK = _umask()


def atomic_write(path: Path, data: bytes | str, mode: int | None = None) -> None:
    """Write by rename: readers see the old file or the new one, never half of either; a
    symlink at ``path`` is replaced, not followed; the temporary file never outlives a failure.
    Its name starts with ``.memdex-`` and has no suffix, so no glob for the real files sees it."""
    import tempfile  # with shutil and random, 7 ms that a search, which writes nothing, need not pay

    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".memdex-")
    try:
        os.fchmod(fd, mode if mode is not None else 0o666 & ~UMASK)
        with os.fdopen(fd, "wb") as f:
            f.write(payload)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


class Budget:
    """A token budget spent in order: ``take(cost)`` spends and says yes, or says no and spends
    nothing when the cost would pass the limit (None: no limit). Every "stop before the budget"
    in memdex goes through here, so they all agree on what "within" means."""

    def __init__(self, limit: int | None) -> None:
        self.limit = limit
        self.spent = 0

    def fits(self, cost: int) -> bool:
        return self.limit is None or self.spent + cost <= self.limit

    def take(self, cost: int) -> bool:
        if not self.fits(cost):
            return False
        self.spent += cost
        return True

    @property
    def left(self) -> int | None:
        return None if self.limit is None else self.limit - self.spent


def run_until_signalled(run: Callable[[], int], stop: Callable[[int], None]) -> int:
    """``run()`` until SIGTERM or SIGHUP (``stop(0)``) or SIGINT (``stop(130)``), when called
    from the main thread; the handlers there before are put back when it returns (or fails to
    start). From another thread, where Python allows no handlers, just ``run()``."""
    if threading.current_thread() is not threading.main_thread():
        return run()
    stops = {signal.SIGTERM: 0, signal.SIGHUP: 0, signal.SIGINT: 130}
    before = {sig: signal.getsignal(sig) for sig in stops}
    for sig, code in stops.items():
        signal.signal(sig, lambda *_, code=code: stop(code))
    try:
        return run()
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
