import sqlite3
from pathlib import Path

import pytest

from memdex.errors import IndexNotFound, SchemaError
from memdex.store import db


def test_new_database_gets_every_migration(db_path: Path) -> None:
    conn = db.connect(db_path)
    names = [r[0] for r in conn.execute("SELECT name FROM memdex_migrations ORDER BY name")]
    assert names == [name for _, name, _ in db.migrations()]
    assert db.schema_version(conn) == db.migrations()[-1][0]
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_migrations_are_numbered_without_gaps() -> None:
    numbers = [n for n, _, _ in db.migrations()]
    assert numbers == list(range(1, len(numbers) + 1))


def test_reopening_applies_nothing(db_path: Path) -> None:
    db.connect(db_path).close()
    conn = db.connect(db_path)
    assert db.migrate(conn) == []


def test_default_synonyms_are_seeded(conn: sqlite3.Connection) -> None:
    rows = {tuple(r) for r in conn.execute("SELECT term, synonym FROM synonyms WHERE source = 'default'")}
    assert ("chatgpt", "chatty") in rows
    assert ("problem", "bug") in rows
    assert len(rows) == 27


def test_older_database_is_migrated(db_path: Path) -> None:
    "A database at schema 1 (as an earlier memdex left it) is brought up to date on open."
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE memdex_migrations (name TEXT PRIMARY KEY, applied_at TEXT NOT NULL)")
    _, name, sql = db.migrations()[0]
    for statement in db.statements(sql):
        conn.execute(statement)
    conn.execute("INSERT INTO memdex_migrations VALUES (?, 'then')", (name,))
    conn.execute("PRAGMA user_version = 1")
    conn.commit()
    conn.close()
    migrated = db.connect(db_path)
    assert db.schema_version(migrated) == db.migrations()[-1][0]
    assert migrated.execute("SELECT count(*) FROM synonyms").fetchone()[0] == 27


def test_newer_schema_is_refused(db_path: Path) -> None:
    db.connect(db_path).close()
    raw = sqlite3.connect(db_path)
    raw.execute("PRAGMA user_version = 999")
    raw.close()
    with pytest.raises(SchemaError, match=r"newer memdex \(schema 999"):
        db.connect(db_path)


def test_foreign_database_is_refused(db_path: Path) -> None:
    raw = sqlite3.connect(db_path)
    raw.execute("CREATE TABLE mine (x)")
    raw.close()
    with pytest.raises(SchemaError, match="not a memdex index"):
        db.connect(db_path)


def test_missing_index_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(IndexNotFound, match="Run `memdex index PATH` first"):
        db.connect(tmp_path / "nope.db", create=False)


def test_statements_keep_triggers_whole() -> None:
    sql = (
        "CREATE TABLE a (x);\nCREATE TRIGGER t AFTER INSERT ON a BEGIN\n"
        "  SELECT 1;\n  SELECT 2;\nEND;\n-- c\n"
    )
    assert db.statements(sql) == [
        "CREATE TABLE a (x);",
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  SELECT 1;\n  SELECT 2;\nEND;",
    ]


def test_named_query_includes_the_shared_filter() -> None:
    sql = db.query("layer_topics")
    assert "{{" not in sql
    assert ":namespace" in sql and "documents_fts MATCH :match" in sql


def test_render_sql_inlines_parameters_and_runs(conn: sqlite3.Connection) -> None:
    sql = db.render_sql(db.query("layer_topics"), {"match": '"it\'s"', "limit": 5})
    assert "MATCH '\"it''s\"'" in sql
    assert "--" not in sql
    assert conn.execute(sql.rstrip(";")).fetchall() == []


def test_default_path_follows_xdg(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("MEMDEX_DB")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    assert db.default_db_path() == tmp_path / "data" / "memdex" / "memdex.db"
    monkeypatch.setenv("MEMDEX_DB", str(tmp_path / "x.db"))
    assert db.default_db_path() == tmp_path / "x.db"


def test_a_connection_keeps_what_it_read_until_the_index_changes(db_path: Path) -> None:
    "Issue 16: a batch of searches reads some facts once; any write, by anyone, empties them."
    from memdex.query import synonyms

    conn, other = db.connect(db_path), db.connect(db_path)
    db.memo(conn, "facts")["x"] = 1
    assert db.memo(conn, "facts") == {"x": 1}
    synonyms.add(other, "zorblat", ["quux"])  # another connection commits
    assert db.memo(conn, "facts") == {}
    db.memo(conn, "facts")["x"] = 1
    synonyms.add(conn, "zorblat", ["quuz"])  # this one writes
    assert db.memo(conn, "facts") == {}
    plain = sqlite3.connect(db_path)  # not opened by db.connect: keeps nothing
    db.memo(plain, "facts")["x"] = 1
    assert db.memo(plain, "facts") == {}
    for c in (conn, other, plain):
        c.close()
