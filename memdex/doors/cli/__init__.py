"""The memdex command line: thin click commands over the library.

Each command parses its options, calls one memdex function and renders the result. Expected
failures (MemdexError) become ``Error: ...`` on stderr with exit code 1 (2 for bad usage);
anything else is a bug and shows its traceback. Commands live by area in this package and
import what they need when they run, so ``memdex search`` loads no parser or watcher.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import click

from memdex import __version__
from memdex.errors import DatabaseError, MemdexError
from memdex.query.engine import Engine
from memdex.store import db


class Failure(click.ClickException):
    "An expected failure: ``Error: ...`` and exit code 1."

    exit_code = 1


class BadParameter(click.ClickException):
    "A parameter value memdex cannot use: exit code 2, like click's own usage errors."

    exit_code = 2


# command -> the module of this package that defines it. A command's module is imported
# only when that command runs (or help lists them all), so ``memdex search`` loads no parser,
# watcher or server.
COMMANDS = {
    "index": "indexing",
    "watch": "indexing",
    "status": "indexing",
    "roots": "roots",
    "show": "reading",
    "search": "searching",
    "ask": "searching",
    "serve": "serving",
    "mcp": "serving",
    "datasette": "serving",
    "lint": "tiers",
    "keywords": "tiers",
    "cost": "tiers",
    "kinds": "tools",
    "demo": "tools",
    "synonyms": "tools",
    "embed": "embedding",
    "setup": "agents",
    "context": "agents",
}


class MemdexGroup(click.Group):
    """Loads each command's module when it is first asked for, and turns MemdexError into a
    clean message and exit code, in one place."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *COMMANDS})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in COMMANDS:
            import importlib

            importlib.import_module(f"{__name__}.{COMMANDS[cmd_name]}")  # registers its commands
        return self.commands.get(cmd_name)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemdexError as exc:
            raise (BadParameter if exc.exit_code == 2 else Failure)(_message(exc, ctx.obj)) from exc


def _message(exc: MemdexError, db_path: object) -> str:
    "The error's message; a database failure raised deep in a write names the index too."
    cause = exc.__cause__
    if isinstance(exc, DatabaseError) and isinstance(cause, sqlite3.OperationalError) and db_path:
        if str(db_path) not in str(exc):
            return db.problem(cause, Path(str(db_path)))
    return str(exc)


@click.group(cls=MemdexGroup)
@click.version_option(__version__, prog_name="memdex")
@click.option(
    "--db",
    "db_path",
    type=click.Path(dir_okay=False),
    envvar=db.DB_ENV,
    help="Index file (default: $MEMDEX_DB, else ~/.local/share/memdex/memdex.db).",
)
@click.pass_context
def cli(ctx: click.Context, db_path: str | None) -> None:
    """Local full-text search over AI agent memories, notes and chat archives.

    Example:

        memdex index ~/.claude/mnemonic && memdex search "deploy key rotation"
    """
    # memdex serve runs a command with its engine as obj (serve.caller): what it keeps warm
    served = ctx.obj
    ctx.meta[ENGINE] = served if isinstance(served, Engine) else None
    ctx.obj = db.resolve_db_path(db_path)


ENGINE = "memdex.engine"  # ctx.meta's key for the engine a command searches with


def engine(ctx: click.Context) -> Engine:
    """The engine this command searches with (``query.engine``): the server's when memdex serve
    runs it, else one of its own, closed when the command ends."""
    found: Engine | None = ctx.meta.get(ENGINE)
    if found is None:
        found = ctx.meta[ENGINE] = Engine()
        ctx.call_on_close(found.close)
    return found


def main() -> None:
    cli(prog_name="memdex")


def connect(ctx: click.Context, create: bool = True, readonly: bool = False) -> sqlite3.Connection:
    """The index, open until the command ends: closed then, not whenever a reference cycle is
    collected -- memdex serve runs commands for hours, and a follower Litestream restores
    into waits until no connection is open."""
    conn = db.connect(ctx.obj, create=create, readonly=readonly, upgrade=True)
    ctx.call_on_close(conn.close)
    return conn


def echo_json(data: Any) -> None:
    from memdex.doors.render import to_json

    click.echo(to_json(data))
