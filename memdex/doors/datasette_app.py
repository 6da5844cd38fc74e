"""``memdex datasette``: the index in Datasette, read-only, on loopback, with its metadata.

The metadata (table descriptions, labelled columns, facets, the search box on documents,
chunks and whole bodies) lives in ``schema/datasette/metadata.json``; each canned query is a
SQL file beside it whose first lines say its title and description. The canned queries call
the SQL functions of ``datasette_plugin``.

The database is served as a plain file, which Datasette opens with ``mode=ro``: it sees
every change a running ``memdex watch`` commits. (Immutable mode would not, and can fail
outright when the file changes underneath it.)
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from memdex.errors import MemdexError
from memdex.store import db

INSTALL = "pip install 'memdex[datasette]'"


def metadata(db_path: Path) -> dict[str, Any]:
    "Datasette metadata for the memdex database at ``db_path``."
    folder = db.schema_folder() / "datasette"
    base = json.loads((folder / "metadata.json").read_text("utf-8"))
    queries: dict[str, Any] = {}
    for item in sorted(folder.iterdir(), key=lambda t: t.name):
        if item.name.endswith(".sql"):
            queries[item.name[:-4]] = canned_query(item.read_text("utf-8"))
    tables = base.pop("tables")
    base["databases"] = {Path(db_path).stem: {"tables": tables, "queries": queries}}
    return base


def canned_query(text: str) -> dict[str, str]:
    "A canned query from SQL whose leading ``-- title:`` and ``-- description:`` lines name it."
    query = {"sql": text.strip()}
    for key in ("title", "description"):
        m = re.search(rf"^--\s*{key}:\s*(.+)$", text, flags=re.MULTILINE)
        if m:
            query[key] = m.group(1).strip()
    return query


def serve(db_path: Path, host: str, port: int, metadata_path: Path) -> None:
    "Run Datasette in this process until it is interrupted."
    try:
        from datasette.cli import cli as datasette_cli
        from datasette.plugins import pm
    except ImportError as exc:
        raise MemdexError(f"Datasette is not installed: {INSTALL}") from exc
    from memdex.doors import datasette_plugin

    if pm.get_plugin("memdex") is None and not pm.is_registered(datasette_plugin):
        pm.register(datasette_plugin, name="memdex")  # entry points are skipped in some setups
    args = ["serve", str(db_path), "--metadata", str(metadata_path), "--host", host, "--port", str(port)]
    args += ["--setting", "sql_time_limit_ms", "3000"]
    datasette_cli.main(args=args, prog_name="memdex datasette", standalone_mode=True)
