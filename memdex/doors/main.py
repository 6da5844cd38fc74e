"""The ``memdex`` command: a search asks the index's ``memdex serve`` first, else the CLI runs.

Nothing is imported before the socket is tried but the thin client (no click, no sqlite3,
no numpy), so a served ``memdex search`` costs little more than Python's own start-up.
"""

from __future__ import annotations

import sys


def main() -> None:
    from memdex.doors.serve.client import forward

    code = forward(sys.argv[1:])
    if code is not None:
        sys.exit(code)
    from memdex.query.meaning import one_blas_thread

    one_blas_thread()  # this process, before anything loads numpy: a search uses one BLAS thread
    from memdex.doors.cli import main as cli

    cli()
