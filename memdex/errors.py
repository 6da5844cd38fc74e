"""Exceptions memdex raises for expected failures.

Each message says what failed, naming the file, path or parameter, and what to do next. The
CLI turns them into ``Error: ...`` and the exit code below; anything else is a bug and shows
a traceback.
"""

from __future__ import annotations


class MemdexError(Exception):
    "An expected failure with a message for the user"

    exit_code = 1


class IndexNotFound(MemdexError):
    "The database file does not exist yet"


class SchemaError(MemdexError):
    "The database was written by a newer memdex, or is not a memdex database"


class DatabaseError(MemdexError):
    "The database cannot be opened or written (read-only, locked, disk full)"


class QuerySyntaxError(MemdexError):
    "A raw FTS5 query (--raw) is not valid FTS5 syntax"


class InvalidParameter(MemdexError):
    "A search or index parameter has a value memdex cannot use"

    exit_code = 2


class IngestError(MemdexError):
    "One source file cannot be read or parsed; it is recorded and skipped"
