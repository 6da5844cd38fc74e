"""Which files memdex may read on request: those inside the roots it was given.

``--retrieve`` and ``get_document`` read files named by the index. A file can change after
it was indexed -- replaced by a symlink to ``~/.ssh``, say -- so each path is resolved
(symlinks and ``..``) at the moment of reading and must still lie inside an indexed root.
"""

from __future__ import annotations

import os
import sqlite3

from . import db


def roots(conn: sqlite3.Connection) -> list[str]:
    "The indexed roots, resolved."
    return [os.path.realpath(r["path"]) for r in conn.execute(db.query("root_paths"))]


def inside(path: str, root_paths: list[str]) -> bool:
    "Is ``path``, resolved, one of the roots or inside one?"
    real = os.path.realpath(path)
    return any(real == r or real.startswith(r.rstrip(os.sep) + os.sep) for r in root_paths)
