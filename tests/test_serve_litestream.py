"""A team set-up with Litestream (the `team` extra ships its binary): the serving host writes
through its watcher, Litestream replicates to a file:// replica, a restored copy finds the
change -- and a restored copy is whole after memdex is killed with -9 in the middle of a write."""

from __future__ import annotations

import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memdex.doors.serve import client
from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db

from .test_serve import memdex, start_server, stop_server
from .test_watcher import wait_until

pytestmark = pytest.mark.slow


def litestream() -> str:
    found = shutil.which("litestream", path=os.path.dirname(sys.executable)) or shutil.which("litestream")
    if not found:
        pytest.fail("litestream is missing: pip install 'memdex[team]' (the test extra has it)")
    return found


@pytest.fixture
def replicated(tmp_path: Path) -> Iterator[tuple[Path, Path, Path]]:
    "An index of one note, and Litestream replicating it to a folder: (db, notes, replica)."
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "gannet.md").write_text("# Gannets\n\nGannets dive from thirty metres.\n")
    db_path = tmp_path / "team.db"
    conn = db.connect(db_path)
    index_paths(conn, [notes])
    conn.close()
    replica = tmp_path / "replica"
    config = tmp_path / "litestream.yml"
    config.write_text(
        f"dbs:\n  - path: {db_path}\n    monitor-interval: 100ms\n"
        f"    replica:\n      type: file\n      path: {replica}\n      sync-interval: 100ms\n"
    )
    with open(tmp_path / "litestream.log", "wb") as log:
        proc = subprocess.Popen([litestream(), "replicate", "-config", str(config)], stderr=log, stdout=log)
    try:
        yield db_path, notes, replica
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(30)


def restore(replica: Path, into: Path) -> Path:
    "The replica restored into a new file."
    for leftover in into.parent.glob(into.name + "*"):
        leftover.unlink()
    subprocess.run(
        [litestream(), "restore", "-o", str(into), replica.as_uri()], check=True, capture_output=True
    )
    return into


def titles(db_path: Path, query: str) -> list[str]:
    conn = db.connect(db_path, create=False, readonly=True)
    try:
        return [h.title for h in search(conn, query).hits]
    finally:
        conn.close()


def test_a_note_written_on_the_serving_host_is_found_on_a_restored_replica_and_a_follower(
    replicated: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    db_path, notes, replica = replicated
    server = start_server(db_path)
    follower = tmp_path / "follower.db"
    follow = subprocess.Popen(
        [litestream(), "restore", "-f", "-follow-interval", "100ms", "-o", str(follower), replica.as_uri()],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        (notes / "puffin.md").write_text("# Puffins\n\nPuffins nest in burrows on the skerry.\n")
        wait_until(lambda: "Puffins" in memdex(db_path, "search", "skerry")[1], timeout=20)
        copy = tmp_path / "restored.db"
        wait_until(lambda: titles(restore(replica, copy), "skerry") == ["Puffins"], timeout=30)
        assert titles(copy, "gannets") == ["Gannets"]
        # a second machine follows the replica and serves it read-only; a later note reaches it
        wait_until(follower.exists, timeout=20)
        reader = start_server(follower, "--read-only")
        try:
            (notes / "tern.md").write_text("# Terns\n\nArctic terns migrate from pole to pole.\n")
            wait_until(lambda: "Terns" in memdex(follower, "search", "arctic")[1], timeout=30)
            assert client.ping(str(follower))["requests"]["cli"] >= 1  # type: ignore[index]
        finally:
            assert stop_server(reader) == 0
    finally:
        follow.send_signal(signal.SIGTERM)
        follow.wait(30)
        assert stop_server(server) == 0


def test_kill_9_in_the_middle_of_a_write_leaves_the_replica_whole(
    replicated: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    db_path, notes, replica = replicated
    server = start_server(db_path)
    burst = notes / "burst"
    burst.mkdir()
    stop = threading.Event()
    body = "Seabird count: kittiwakes, fulmars and guillemots on the ledges. " * 40

    def keep_writing() -> None:  # a stream of changes, so the watcher is always in a batch
        for i in range(1000):
            if stop.is_set():
                return
            (burst / f"note-{i:04}.md").write_text(f"# Note {i}\n\n{body}\n")

    writer = threading.Thread(target=keep_writing)
    writer.start()
    try:
        wait_until(lambda: re.search(r"files: [1-9]\d* added", server.log.read_text()) is not None, 20)
        time.sleep(0.2)  # and the next is being written
        server.proc.kill()
        server.proc.wait(10)
    finally:
        stop.set()
        writer.join()
    committed = sqlite3.connect(db_path).execute("SELECT count(*) FROM documents").fetchone()
    copy = tmp_path / "after-kill.db"

    def shipped() -> bool:  # Litestream ships all that was committed before the kill
        conn = sqlite3.connect(restore(replica, copy))
        try:
            return bool(conn.execute("SELECT count(*) FROM documents").fetchone() == committed)
        finally:
            conn.close()

    wait_until(shipped, timeout=20)
    conn = sqlite3.connect(copy)
    assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    conn.close()
    conn = db.connect(copy)
    assert db.check(conn) == []  # pages, b-trees and the three full-text indexes agree
    conn.close()
    assert titles(copy, "gannets") == ["Gannets"]
