"""The Watcher on real files and real filesystem events; waits use timeouts, never sleeps alone."""

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memdex.watch.events import Watcher


def wait_until(predicate: Callable[[], bool], timeout: float = 10.0) -> None:
    "Filesystem notifications are asynchronous: poll for the outcome, fail after a timeout."
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s")
        time.sleep(0.02)


class Batches:
    def __init__(self) -> None:
        self.batches: list[set[str]] = []
        self.lock = threading.Lock()

    def __call__(self, paths: set[str], first_seen: float) -> None:
        assert first_seen <= time.time()
        with self.lock:
            self.batches.append(paths)

    @property
    def paths(self) -> set[str]:
        with self.lock:
            return set().union(*self.batches) if self.batches else set()


@pytest.fixture
def watched(tmp_path: Path) -> Iterator[tuple[Path, Batches, Watcher]]:
    root = tmp_path / "root"
    root.mkdir()
    batches = Batches()
    watcher = Watcher(batches, debounce=0.1, skip=[str(root / "index.db")])
    watcher.start()
    watcher.watch(root)
    yield root, batches, watcher
    watcher.stop()


def test_create_modify_delete(watched: tuple[Path, Batches, Watcher]) -> None:
    root, batches, _ = watched
    note = root / "a.md"
    note.write_text("one")
    wait_until(lambda: str(note) in batches.paths)
    batches.batches.clear()
    note.write_text("two")
    wait_until(lambda: str(note) in batches.paths)
    batches.batches.clear()
    note.unlink()
    wait_until(lambda: str(note) in batches.paths)


def test_a_burst_is_one_batch(watched: tuple[Path, Batches, Watcher]) -> None:
    root, batches, _ = watched
    for i in range(50):
        (root / f"n{i}.md").write_text(str(i))
    wait_until(lambda: len(batches.paths) >= 50)
    assert len(batches.batches) <= 3


def test_moves_report_both_ends_and_folders(watched: tuple[Path, Batches, Watcher]) -> None:
    root, batches, _ = watched
    folder = root / "sub"
    folder.mkdir()
    (folder / "x.md").write_text("x")
    wait_until(lambda: str(folder / "x.md") in batches.paths)
    batches.batches.clear()
    folder.rename(root / "moved")
    wait_until(lambda: {str(folder), str(root / "moved")} <= batches.paths)


def test_ignored_and_own_files_are_not_reported(watched: tuple[Path, Batches, Watcher]) -> None:
    root, batches, _ = watched
    (root / ".git").mkdir()
    (root / ".git" / "HEAD").write_text("ref")
    (root / ".note.md.swp").write_text("swap")
    (root / "index.db").write_text("db")
    (root / "index.db-wal").write_text("wal")
    (root / "real.md").write_text("real")  # a marker: once it arrives, the others had their chance
    wait_until(lambda: str(root / "real.md") in batches.paths)
    time.sleep(0.3)
    assert batches.paths == {str(root / "real.md")}


def test_a_deleted_root_ends_its_watch_and_can_be_watched_again(
    watched: tuple[Path, Batches, Watcher],
) -> None:
    root, batches, watcher = watched
    (root / "a.md").write_text("a")
    wait_until(lambda: str(root / "a.md") in batches.paths)
    assert watcher.is_alive(root)
    shutil.rmtree(root)
    wait_until(lambda: not watcher.is_alive(root))
    root.mkdir()
    watcher.watch(root)
    batches.batches.clear()
    (root / "b.md").write_text("b")
    wait_until(lambda: str(root / "b.md") in batches.paths)


def test_a_single_file_root(tmp_path: Path) -> None:
    note = tmp_path / "only.md"
    note.write_text("x")
    batches = Batches()
    watcher = Watcher(batches, debounce=0.05)
    watcher.start()
    try:
        watcher.watch(note)
        (tmp_path / "other.md").write_text("y")
        note.write_text("z")
        wait_until(lambda: str(note) in batches.paths)
        assert str(tmp_path / "other.md") not in batches.paths
    finally:
        watcher.stop()


def test_stop_joins_every_thread(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    watcher = Watcher(Batches(), debounce=0.05)
    watcher.start()
    watcher.watch(tmp_path)
    (tmp_path / "a.md").write_text("a")
    watcher.stop()
    assert set(threading.enumerate()) == before
    assert os.listdir(tmp_path) == ["a.md"]
