"""Exceptions memdex raises for expected failures, and whether a bug may be survived.

Each message says what failed, naming the file, path or parameter, and what to do next. The
CLI turns them into ``Error: ...`` and the exit code below; anything else is a bug and shows
a traceback. Three places survive bugs so one cannot stop a long run -- a parser's (the file
is recorded as skipped), an MCP tool call's (an ``internal`` error), a watcher batch's
(logged; the watcher catches up) -- and each asks ``raise_errors()`` first.
"""

from __future__ import annotations

import os

RAISE_ERRORS_ENV = "MEMDEX_RAISE_ERRORS"


def raise_errors() -> bool:
    """Should a bug propagate instead of being recorded and survived?

    True when ``MEMDEX_RAISE_ERRORS`` is set to anything but ``""`` or ``"0"``. The test suite
    sets it, so a crash can never hide inside a test. Read at each call, not at import.
    """
    return os.environ.get(RAISE_ERRORS_ENV, "") not in ("", "0")


class MemdexError(Exception):
    "An expected failure with a message for the user"

    exit_code = 1


class IndexNotFound(MemdexError):
    "The database file does not exist yet"


class SchemaError(MemdexError):
    "The database was written by a newer memdex, or is not a memdex database"


class MigrationNeeded(SchemaError):
    "The database was written by an older memdex, and a read-only connection may not migrate it"


class DatabaseError(MemdexError):
    "The database cannot be opened or written (read-only, locked, disk full)"


class QuerySyntaxError(MemdexError):
    "A raw FTS5 query (--raw) is not valid FTS5 syntax"


class InvalidParameter(MemdexError):
    "A search or index parameter has a value memdex cannot use"

    exit_code = 2


class IngestError(MemdexError):
    "One source file cannot be read or parsed; it is recorded and skipped"
