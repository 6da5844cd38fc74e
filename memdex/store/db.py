"""The SQLite file: where it lives, how it is opened, its migrations and named queries.

All SQL memdex runs lives in ``schema/`` (installed as ``memdex.schema``): numbered migrations
in ``schema/migrations/NNNN_name.sql`` and one named query per file in ``schema/queries/``.
Applied migrations are recorded in the ``memdex_migrations`` table and in ``PRAGMA
user_version``, so a database written by a newer memdex is refused instead of misread.
"""

from __future__ import annotations

import os
import re
import sqlite3
from functools import cache, lru_cache
from pathlib import Path
from typing import Any

from memdex import secrets, tokens
from memdex.errors import DatabaseError, IndexNotFound, MigrationNeeded, SchemaError
from memdex.utils import utc_stamp

DB_ENV = "MEMDEX_DB"
WORDS_KEPT = 1024  # texts whose tokens a connection keeps (add_functions)
_MIGRATION_NAME = re.compile(r"^(\d{4})_[a-z0-9_]+\.sql$")


def default_db_path() -> Path:
    "``$MEMDEX_DB``, else ``$XDG_DATA_HOME/memdex/memdex.db`` (``~/.local/share`` by default)."
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share"
    return Path(data_home).expanduser() / "memdex" / "memdex.db"


def resolve_db_path(db: str | os.PathLike[str] | None) -> Path:
    """The index file: ``db`` (else the default) as an absolute path with symlinks resolved,
    so a service unit started elsewhere finds it, and two names of one file share one
    writer lock (it lives beside the file)."""
    return Path(os.path.realpath(Path(db).expanduser() if db else default_db_path()))


@cache
def schema_folder() -> Path:
    """Where ``memdex.schema``'s files are. Read as files, not through importlib.resources:
    its import alone (tempfile, shutil, zipfile...) cost every command 10 ms, and memdex
    is never run from a zip."""
    from importlib.util import find_spec

    spec = find_spec("memdex.schema")
    if spec is None or not spec.submodule_search_locations:
        raise SchemaError("memdex.schema is missing: memdex is not installed whole; install it again.")
    return Path(spec.submodule_search_locations[0])


@cache
def _migration_files() -> list[tuple[int, str, Path]]:
    folder = schema_folder() / "migrations"
    found = []
    for entry in folder.iterdir():
        match = _MIGRATION_NAME.match(entry.name)
        if match:
            found.append((int(match.group(1)), entry.name[:-4], entry))
    return sorted(found, key=lambda m: m[0])


def latest_version() -> int:
    "The newest schema this memdex knows: read from file names, without reading the SQL."
    return _migration_files()[-1][0]


@cache
def migrations() -> list[tuple[int, str, str]]:
    "(number, name, sql) of every migration shipped with this memdex, in order."
    return [(n, name, entry.read_text("utf-8")) for n, name, entry in _migration_files()]


_INCLUDE = re.compile(r"\{\{([a-z0-9_]+)\}\}")
_PARAM = re.compile(r"(?<![:\w]):([a-z_][a-z0-9_]*)")


@cache
def query(name: str) -> str:
    """The text of the named query ``schema/queries/<name>.sql``.

    ``{{other}}`` inside a query includes the named query ``other`` (used for the filter
    expression every layer shares), so each piece of SQL is written once.
    """
    text = (schema_folder() / "queries" / f"{name}.sql").read_text("utf-8")
    return _INCLUDE.sub(lambda m: "(" + _included(m.group(1), name) + ")", text)


def _included(name: str, parent: str) -> str:
    if name == parent:
        raise ValueError(f"schema/queries/{name}.sql includes itself")
    return query(name).strip()


def render_sql(sql: str, params: dict[str, object]) -> str:
    "The SQL with its parameters written in as literals: ready to paste into ``sqlite3``."

    def literal(match: re.Match[str]) -> str:
        value = params.get(match.group(1))
        if value is None:
            return "NULL"
        if isinstance(value, (int, float)):
            return repr(value)
        return "'" + str(value).replace("'", "''") + "'"

    code = "\n".join(ln for ln in _strip_comments(sql).splitlines() if ln.strip())
    return _PARAM.sub(literal, code).strip() + ";"


def statements(sql: str) -> list[str]:
    "Split a SQL file into complete statements (triggers included)."
    out: list[str] = []
    current = ""
    for line in sql.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            if _strip_comments(current).strip():
                out.append(current.strip())
            current = ""
    if _strip_comments(current).strip():
        out.append(current.strip())
    return out


def _strip_comments(sql: str) -> str:
    return "\n".join(line.split("--", 1)[0] for line in sql.splitlines())


def connect(
    path: str | os.PathLike[str] | None = None,
    *,
    create: bool = True,
    readonly: bool = False,
    upgrade: bool = False,
) -> sqlite3.Connection:
    """Open the index, creating and migrating it when ``create`` is true.

    The connection is in autocommit mode (``isolation_level=None``): writers open their own
    short transactions with :func:`transaction`. WAL lets readers run while a writer commits.
    ``readonly`` connections (searches) never write, so an index on read-only media, or in a
    folder the reader may not write to, can still be searched. With ``upgrade``, a read-only
    connection to an index an older memdex wrote first migrates it, when the file can be
    written (the first search after an upgrade); else it raises :class:`MigrationNeeded`.
    """
    db_path = resolve_db_path(path)
    if not db_path.exists():
        if not create:
            raise IndexNotFound(
                f"No memdex index at {db_path}. Run `memdex index PATH` first, "
                f"or point --db (or ${DB_ENV}) at an existing index."
            )
        try:
            db_path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DatabaseError(f"Cannot create the folder for {db_path}: {exc.strerror}") from exc
    try:
        if readonly:
            conn = _open_readonly(db_path)
        else:
            conn = sqlite3.connect(
                db_path, isolation_level=None, timeout=10, check_same_thread=False, factory=Connection
            )
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute("PRAGMA synchronous = NORMAL")
        conn.row_factory = sqlite3.Row
        conn.execute("PRAGMA foreign_keys = ON")
        add_functions(conn)
        try:
            migrate(conn, apply=not readonly)
        except SchemaError:
            conn.close()
            raise
    except MigrationNeeded as exc:
        if upgrade and readonly and _writable(db_path):
            connect(db_path, create=False).close()  # migrate once, as a writer
            return connect(db_path, create=create, readonly=True)
        raise MigrationNeeded(f"{db_path}: {exc}") from None
    except SchemaError as exc:
        raise SchemaError(f"{db_path}: {exc}") from None
    except sqlite3.OperationalError as exc:
        raise DatabaseError(problem(exc, db_path)) from exc
    except sqlite3.DatabaseError as exc:
        raise DatabaseError(f"Cannot open {db_path} as a memdex index: {exc}") from exc
    return conn


def _writable(db_path: Path) -> bool:
    "Can this process write the index (and its journal files beside it)?"
    return os.access(db_path, os.W_OK) and os.access(db_path.parent, os.W_OK)


def _open_readonly(db_path: Path) -> sqlite3.Connection:
    """Read-only; where even the WAL's shared-memory file cannot be made (a read-only folder),
    immutable: no locking, which is safe exactly because nothing can write there either."""
    uri = db_path.resolve().as_uri()
    try:
        conn = sqlite3.connect(
            f"{uri}?mode=ro",
            uri=True,
            isolation_level=None,
            timeout=10,
            check_same_thread=False,
            factory=Connection,
        )
        conn.execute("PRAGMA user_version").fetchone()  # opens the file, and the WAL if any
        return conn
    except sqlite3.OperationalError:
        return sqlite3.connect(
            f"{uri}?immutable=1", uri=True, isolation_level=None, check_same_thread=False, factory=Connection
        )


def add_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions the index's own SQL calls: ``memdex_words(text)``, the tokens of a
    text as its full-text tables hold them (``memdex.tokens``; their content views and
    triggers call it). Every connection to an index needs it; Datasette's get it from the
    plugin. Its results are kept for the connection's last texts (``WORDS_KEPT``): deleting a
    document makes its chunks' tokens twice, once for its body and once for each chunk."""
    conn.create_function(
        "memdex_words", 1, lru_cache(maxsize=WORDS_KEPT)(tokens.index_text), deterministic=True
    )


class Connection(sqlite3.Connection):
    "A connection to the index that keeps what it has read while the index is unchanged (memo)."

    # (index version, dicts by name), swapped whole: a thread sharing the connection never
    # sees one version's facts under another's name.
    memos: tuple[tuple[int, int], dict[str, dict[Any, Any]]] | None = None


def memo(conn: sqlite3.Connection, name: str) -> dict[Any, Any]:
    """The connection's dict ``name`` of facts read from the index, so that a batch of searches
    or a long-running server reads each once (issue 16).

    It is emptied whenever the index may have changed: another connection committed (``PRAGMA
    data_version``, which inside a read transaction names its snapshot) or this one wrote
    (``total_changes``). A connection :func:`connect` did not open keeps nothing."""
    if not isinstance(conn, Connection):
        return {}
    key = (conn.execute("PRAGMA data_version").fetchone()[0], conn.total_changes)
    held = conn.memos
    if held is None or held[0] != key:
        held = conn.memos = (key, {})
    return held[1].setdefault(name, {})


def chunk_count(conn: sqlite3.Connection) -> int:
    "How many chunks the index holds, read once while it is unchanged (``memo``)."
    known = memo(conn, "chunk_count")
    if "all" not in known:
        known["all"] = int(conn.execute(query("chunks_count")).fetchone()[0])
    return int(known["all"])


def has_copies(conn: sqlite3.Connection) -> bool:
    """Does the index hold a copy of an agent session (``documents.copy_of``, migration 0012)?
    Then a search without filters cannot skip ``document_filter.sql``, which leaves copies out."""
    known = memo(conn, "session_copies")
    if "any" not in known:
        known["any"] = bool(conn.execute(query("session_copies_exist")).fetchone()[0])
    return bool(known["any"])


def path_of(conn: sqlite3.Connection) -> Path | None:
    "The file a connection has open (None for an in-memory database)."
    row = conn.execute("PRAGMA database_list").fetchone()
    return Path(row[2]) if row and row[2] else None


def problem(exc: sqlite3.OperationalError, db_path: Path | None = None) -> str:
    "What a failed write or open means for the user, and what to do."
    message = str(exc)
    where = f" ({db_path})" if db_path else ""
    if "full" in message:
        return f"The disk is full{where}: nothing of the last batch was written. Free space and run again."
    if "disk I/O error" in message:
        return (
            f"Writing the index failed{where} (disk I/O error: the disk may be full, failing, or over "
            "a file-size limit); nothing of the last batch was written. Check the disk and run again."
        )
    if "readonly" in message or "read-only" in message:
        return f"The index is read-only{where}: check the permissions of the database file and its folder."
    if "locked" in message or "busy" in message:
        return f"The index is locked by another writer{where}: wait for it, or stop it, and run again."
    if "unable to open" in message:
        return f"Cannot open the index{where}: check that its folder exists and can be read."
    return f"The index could not be used{where}: {message}"


def check(conn: sqlite3.Connection) -> list[str]:
    """What is wrong with the database file and its full-text indexes; empty when all is well.

    ``PRAGMA integrity_check`` (pages, b-trees, indexes), then FTS5's ``integrity-check`` of
    every full-text table against its content. It changes nothing, but FTS5 takes its check
    as an INSERT, so ``conn`` must not be a read-only connection.
    """
    problems = [r[0] for r in conn.execute("PRAGMA integrity_check") if r[0] != "ok"]
    for statement in statements(query("fts_integrity_check")):
        try:
            conn.execute(statement)
        except sqlite3.DatabaseError as exc:
            table = re.search(r"INSERT INTO (\w+)", statement)
            problems.append(f"{table.group(1) if table else statement}: {exc}")
    return problems


def schema_version(conn: sqlite3.Connection) -> int:
    return int(conn.execute("PRAGMA user_version").fetchone()[0])


def migrate(conn: sqlite3.Connection, *, apply: bool = True) -> list[str]:
    "Apply pending migrations in order; return the names applied."
    latest = latest_version()
    current = schema_version(conn)
    if current > latest:
        raise SchemaError(
            f"This index was written by a newer memdex (schema {current}, this memdex knows "
            f"up to {latest}). Upgrade memdex (pip install -U memdex) or use another --db."
        )
    if current == 0 and _has_foreign_tables(conn):
        raise SchemaError(
            "This SQLite file is not a memdex index (it has tables memdex did not create). "
            "Point --db at a new file."
        )
    if current == latest and _tokens_current(conn) and _secrets_current(conn):
        return []
    if not apply:
        raise MigrationNeeded(
            f"This index needs migrating to schema {latest} (it is at {current}), and it cannot be "
            "written here; run `memdex index` (or any memdex command) once where it can be."
            if current < latest
            else "This index's full-text tables were built with other word rules than this memdex's "
            f"({tokens.IDENTITY}), and it cannot be written here to build them again; run "
            "`memdex index` (or any memdex command) once where it can be."
            if not _tokens_current(conn)
            else f"This index's text was not masked with this memdex's secret rules ({secrets.IDENTITY}), "
            "and it cannot be written here to mask it; run `memdex index` (or any memdex command) "
            "once where it can be."
        )
    applied = []
    with transaction(conn):
        # Re-read inside the write lock: another process may have migrated meanwhile.
        current = schema_version(conn)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS memdex_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)"
        )
        for number, name, sql in migrations():
            if number <= current:
                continue
            for statement in statements(sql):
                conn.execute(statement)
            conn.execute(
                "INSERT INTO memdex_migrations (name, applied_at) VALUES (?, ?)", (name, utc_stamp())
            )
            conn.execute(f"PRAGMA user_version = {number:d}")
            applied.append(name)
        if not _tokens_current(conn):
            _rebuild_full_text(conn)
        if not _secrets_current(conn):
            from memdex.store.masking import mask_index  # rarely: not on every command's start

            mask_index(conn, query)
    return applied


def _tokens_current(conn: sqlite3.Connection) -> bool:
    "Were the full-text tables built with this memdex's tokens (``tokens.IDENTITY``)?"
    return _recorded(conn, "tokenizer_identity") == tokens.IDENTITY  # migration 0011's table


def _secrets_current(conn: sqlite3.Connection) -> bool:
    "Was the stored text masked with this memdex's secret rules (``secrets.IDENTITY``)?"
    return _recorded(conn, "secret_rules_identity") == secrets.IDENTITY  # migration 0013's table


def _recorded(conn: sqlite3.Connection, name: str) -> str | None:
    "The identity a named query reads from the index; None before the migration that made its table."
    try:
        row = conn.execute(query(name)).fetchone()
    except sqlite3.OperationalError:  # no such table yet
        return None
    return None if row is None else str(row[0])


def _rebuild_full_text(conn: sqlite3.Connection) -> None:
    """Make every full-text table again from its content view, with this memdex's tokens: once
    after migration 0011, and whenever the word rules change (a new PyStemmer, a new Python's
    Unicode). An index that holds anything says so on stderr, since it takes a while: about as
    long as writing its words did."""
    import sys
    import time

    chunks = conn.execute(query("chunks_count")).fetchone()[0]
    where = path_of(conn)
    if chunks:
        sys.stderr.write(
            f"memdex: building the full-text index of {where} again for new word rules "
            f"({chunks:,} passage{'' if chunks == 1 else 's'}; once)...\n"
        )
    started = time.perf_counter()
    for statement in statements(query("fts_rebuild")):
        conn.execute(statement, {"identity": tokens.IDENTITY})
    if chunks:
        sys.stderr.write(f"memdex: done in {time.perf_counter() - started:.1f} s\n")


def _has_foreign_tables(conn: sqlite3.Connection) -> bool:
    row = conn.execute(
        "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name != 'memdex_migrations'"
    ).fetchone()
    return bool(row[0])


class transaction:
    """``with transaction(conn):`` -- BEGIN IMMEDIATE ... COMMIT, or ROLLBACK on error.

    IMMEDIATE takes the write lock up front, so two writers queue on the busy timeout
    instead of failing halfway through with "database is locked".
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    def __enter__(self) -> sqlite3.Connection:
        try:
            self.conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise DatabaseError(problem(exc, path_of(self.conn))) from exc
        return self.conn

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if exc_type is None:
            self.conn.execute("COMMIT")
        elif self.conn.in_transaction:
            self.conn.execute("ROLLBACK")
