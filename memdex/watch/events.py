"""Which paths changed under the watched roots, delivered in debounced batches.

A watchdog Observer watches each root; events become paths (both ends of a move); paths memdex
never reads (``ingest.walk.IgnoreList``, the index's own files) are dropped (a database's
``-wal`` is kept: ``ingest.index_changes`` reads it as its database); and
watchdog's EventDebouncer gathers a burst into one call of ``on_change(paths, first_seen)``.
This module parses nothing: what is in the changed files is ``ingest``'s business.
"""

from __future__ import annotations

import os
import threading
import time
import warnings
from collections.abc import Callable, Iterable
from pathlib import Path

from watchdog.events import (
    EVENT_TYPE_CLOSED_NO_WRITE,
    EVENT_TYPE_MODIFIED,
    EVENT_TYPE_OPENED,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import ObservedWatch
from watchdog.utils.event_debouncer import EventDebouncer

from memdex.ingest import companion_owner
from memdex.ingest.walk import IgnoreList

OnChange = Callable[[set[str], float], None]


def _text(path: bytes | str) -> str:
    return os.fsdecode(path)


class _RootHandler(FileSystemEventHandler):
    "Events under one root, filtered, passed on to the debouncer."

    def __init__(self, watcher: Watcher, root: Path) -> None:
        self.watcher = watcher
        self.root = root
        self.single_file = not root.is_dir()

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type in (EVENT_TYPE_OPENED, EVENT_TYPE_CLOSED_NO_WRITE):
            return
        if event.is_directory and event.event_type == EVENT_TYPE_MODIFIED:
            return  # a folder's own mtime; the files in it send their own events
        paths = [_text(event.src_path)] + ([_text(event.dest_path)] if event.dest_path else [])
        if any(self._wanted(p, event.is_directory) for p in paths):
            self.watcher.received(event)

    def _wanted(self, path: str, is_dir: bool) -> bool:
        if self.single_file:  # a database's commits land in its -wal first: they count too
            return path == str(self.root) or companion_owner(path) == str(self.root)
        if self.watcher.skipped(path):
            return False
        rel = os.path.relpath(path, self.root)
        return rel == "." or not self.watcher.ignored(rel, is_dir=is_dir)


class Watcher:
    """Watch roots; call ``on_change`` with each debounced batch of changed paths.

    ``skip`` lists absolute paths whose own events never count (the index file, its WAL, lock
    and state files), so an index kept inside a watched folder cannot feed itself events.
    """

    def __init__(self, on_change: OnChange, debounce: float = 0.15, skip: Iterable[str] = ()) -> None:
        self.on_change = on_change
        self.skip = tuple(skip)
        self.ignored = IgnoreList()
        self.observer = Observer()
        self.debouncer = EventDebouncer(debounce, self._flush)
        self.watches: dict[str, ObservedWatch] = {}
        self._first_seen: float | None = None
        self._lock = threading.Lock()

    def skipped(self, path: str) -> bool:
        return path.startswith(self.skip) if self.skip else False

    def start(self) -> None:
        # A folder created with folders inside races watchdog's own walk against the inotify
        # events of the inner folders: both add the same callback, watchdog says so with a
        # RuntimeWarning and keeps one. Harmless, but a warning turned into an error (as under
        # pytest) kills the inotify thread and every later event is lost; a user would only
        # see the noise. Started here, not at import, so it holds inside warnings contexts.
        warnings.filterwarnings(
            "ignore", message=r"Callback with id '\d+' already exists", category=RuntimeWarning
        )
        self.observer.start()
        self.debouncer.start()

    def stop(self) -> None:
        "Stop and join every thread this watcher started; pending events are flushed first."
        for thread in (self.observer, self.debouncer):
            thread.stop()
            if thread.ident is not None:  # started (a failed start-up stops it unstarted)
                thread.join()

    def watch(self, root: Path) -> None:
        "Start watching a root (recursively for a folder). Raises OSError if the OS refuses."
        key = str(root)
        if key in self.watches:
            self.unwatch(root)
        target = root if root.is_dir() else root.parent
        self.watches[key] = self.observer.schedule(
            _RootHandler(self, root), str(target), recursive=root.is_dir()
        )

    def unwatch(self, root: Path) -> None:
        watch = self.watches.pop(str(root), None)
        if watch is not None:
            try:
                self.observer.unschedule(watch)
            except KeyError:
                pass  # its emitter already stopped (the folder was deleted) and was removed

    def is_alive(self, root: Path) -> bool:
        "Is the root still watched? A deleted folder ends its watch, even if it comes back."
        watch = self.watches.get(str(root))
        return watch is not None and any(e.watch == watch and e.is_alive() for e in self.observer.emitters)

    def received(self, event: FileSystemEvent) -> None:
        with self._lock:
            if self._first_seen is None:
                self._first_seen = time.time()
        self.debouncer.handle_event(event)

    def _flush(self, events: list[FileSystemEvent]) -> None:
        paths: set[str] = set()
        for event in events:
            paths.add(_text(event.src_path))
            if event.dest_path:
                paths.add(_text(event.dest_path))
        with self._lock:
            first, self._first_seen = self._first_seen or time.time(), None
        self.on_change({p for p in paths if not self.skipped(p)}, first)
