"""Many readers while one writer ingests a burst: no reader ever fails or sees a committed
note go missing. A small version of ``scripts/reliability.py load``; times are reported
there, never asserted here."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "scripts"))
from reliability_kit import load  # noqa: E402

# Slow as a whole (see docs/development.md): the quick check leaves it out.
pytestmark = pytest.mark.slow


# Above one write batch: `memdex index` commits every 1,000 files or second, `memdex watch`
# every 200, so the readers search across commits however fast the machine.
@pytest.mark.parametrize(("writer", "notes"), [("index", 1200), ("watch", 400)])
def test_eight_readers_during_a_burst_see_no_error(tmp_path: Path, writer: str, notes: int) -> None:
    # Readers at niceness 5: at 0, eight of them left the writer a fifth of CI's 2 cores, and
    # the burst took 2-3 times as long (its length is the test's cost: the readers spin
    # through it). Each still searches hundreds of times during it, across its commits.
    report = load.load(tmp_path, readers=8, notes=notes, writer=writer, base=200, reader_nice=5)
    assert report["writer_ok"]
    assert report["errors"] == 0, report["error_examples"]
    assert min(report["searches_per_reader"]) >= 10  # every reader searched during the burst
    assert report["burst_notes_missing_after"] == 0
    assert report["problems"] == []
