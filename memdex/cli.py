"""The memdex command line: thin click commands over the library.

Each command parses its options, calls one memdex function and renders the result. Expected
failures (MemdexError) become ``Error: ...`` on stderr with exit code 1 (2 for bad usage);
anything else is a bug and shows its traceback.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from . import __version__, db
from .errors import MemdexError


class _Failure(click.ClickException):
    "An expected failure: ``Error: ...`` and exit code 1."

    exit_code = 1


class _BadParameter(click.ClickException):
    "A parameter value memdex cannot use: exit code 2, like click's own usage errors."

    exit_code = 2


class MemdexGroup(click.Group):
    "Turns MemdexError into a clean message and exit code, in one place."

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemdexError as exc:
            raise (_BadParameter if exc.exit_code == 2 else _Failure)(str(exc)) from exc


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
    ctx.obj = db.resolve_db_path(db_path)


def main() -> None:
    cli(prog_name="memdex")


def _connect(ctx: click.Context, create: bool = True) -> Any:
    return db.connect(ctx.obj, create=create)


def _echo_json(data: Any) -> None:
    from .render import to_json

    click.echo(to_json(data))


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, file_okay=True, dir_okay=True))
@click.option("--kind", help="Force a source kind for every file (see `memdex kinds`).")
@click.option(
    "--scope",
    type=click.Choice(["user", "project"]),
    help="Scope of these memories (default: project inside a git work tree, else user).",
)
@click.option(
    "--max-file-size",
    type=click.FloatRange(min=0.001),
    help="Skip files larger than this many MB (default: 5 for markdown).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress bar, no summary: only errors.")
@click.pass_context
def index(
    ctx: click.Context,
    paths: tuple[str, ...],
    kind: str | None,
    scope: str | None,
    max_file_size: float | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Index files and folders (every root indexed before, if no PATH is given).

    Unchanged files cost a stat; changed ones are replaced whole; deleted ones disappear.
    Files that cannot be read are listed, skipped and recorded (exit code 1).

    Example:

        memdex index ~/.claude/mnemonic ./.serena/memories
    """
    from .ingest.pipeline import index_paths
    from .render import index_text, skipped_text

    conn = _connect(ctx)
    if not paths:
        paths = tuple(r["path"] for r in conn.execute(db.query("root_paths")))
        if not paths:
            raise click.UsageError("Nothing to index yet: give a PATH, e.g. `memdex index ~/notes`.")
    report = index_paths(
        conn,
        paths,
        kind=kind,
        scope=scope,
        progress=None if quiet or as_json else _progress(),
        max_file_size=int(max_file_size * 1024 * 1024) if max_file_size else None,
    ).to_dict()
    if as_json:
        _echo_json(report)
    elif not quiet:
        click.echo(index_text(report))
    if report["skipped"]:
        if not as_json:
            click.echo(skipped_text(report), err=True)
        ctx.exit(1)


def _progress() -> Callable[[int, int], None] | None:
    "A progress bar on stderr for long runs on a terminal; nothing when piped."
    if not sys.stderr.isatty():
        return None
    state: dict[str, Any] = {}

    def update(done: int, total: int) -> None:
        if total < 500:
            return
        if "bar" not in state or state["total"] != total:
            state["bar"] = click.progressbar(length=total, label="Indexing", file=sys.stderr)
            state["total"], state["done"] = total, 0
            state["bar"].__enter__()
        state["bar"].update(done - state["done"])
        state["done"] = done
        if done == total:
            state["bar"].__exit__(None, None, None)
            del state["bar"]

    return update


def search_options(f: Callable[..., Any]) -> Callable[..., Any]:
    "Options shared by every command that searches."
    options = [
        click.option(
            "-n",
            "--limit",
            default=10,
            show_default=True,
            type=click.IntRange(min=1),
            help="Most results to show.",
        ),
        click.option(
            "--granularity",
            type=click.Choice(["doc", "chunk"]),
            default="doc",
            show_default=True,
            help="One result per document, or per matching chunk.",
        ),
        click.option(
            "--max-tokens",
            type=click.IntRange(min=1),
            help="Stop adding results before their estimated tokens pass this budget.",
        ),
        click.option("--namespace", help="Only this namespace (and those under it), e.g. decisions."),
        click.option(
            "--tag", "tags", multiple=True, help="Only documents with this tag (repeat: all of them)."
        ),
        click.option(
            "--type", "doc_type", help="Only this memory type, e.g. semantic, episodic, procedural."
        ),
        click.option(
            "--scope", type=click.Choice(["user", "project"]), help="Only user or project memories."
        ),
        click.option("--kind", "kinds", multiple=True, help="Only this source kind (repeatable)."),
        click.option("--platform", help="Only chats from this platform, e.g. chatgpt, claude."),
        click.option("--since", help="Only documents dated on or after YYYY[-MM[-DD]]."),
        click.option("--until", help="Only documents dated on or before YYYY[-MM[-DD]]."),
        click.option("--no-synonyms", is_flag=True, help="Skip layers 2 and 4 (synonym expansion)."),
        click.option(
            "--raw", is_flag=True, help="QUERY is FTS5 syntax (AND, OR, NEAR, prefix*), used as is."
        ),
        click.option("--full", is_flag=True, help="Include each result's text in --json output."),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def filters_from(kw: dict[str, Any]) -> Any:
    from .query import Filters

    return Filters(
        kinds=list(kw["kinds"]),
        namespace=kw["namespace"],
        type=kw["doc_type"],
        scope=kw["scope"],
        platform=kw["platform"],
        tags=list(kw["tags"]),
        since=kw["since"],
        until=kw["until"],
    )


@cli.command()
@click.argument("query", required=False)
@search_options
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON.")
@click.option("--sql", "show_sql", is_flag=True, help="Print the SQL each layer ran, ready for sqlite3.")
@click.option(
    "--batch",
    type=click.File("r"),
    help="Run the JSON lines of FILE (- for stdin) as searches; JSON lines out.",
)
@click.pass_context
def search(
    ctx: click.Context, query: str | None, as_json: bool, show_sql: bool, batch: Any, **kw: Any
) -> None:
    """Search the index: topics first, then synonyms, then content.

    Example:

        memdex search "what did we decide about the cache?" --limit 5
    """
    from .query import search as run_search
    from .render import search_sql, search_text

    if batch is not None:
        from .batch import run_batch

        for line in run_batch(_connect(ctx, create=False), batch):
            click.echo(json.dumps(line, ensure_ascii=False, default=str))
        return
    if query is None:
        raise click.UsageError("Give a QUERY, or --batch FILE.")
    result = run_search(
        _connect(ctx, create=False),
        query,
        limit=kw["limit"],
        granularity=kw["granularity"],
        max_tokens=kw["max_tokens"],
        use_synonyms=not kw["no_synonyms"],
        raw=kw["raw"],
        filters=filters_from(kw),
        full_text=kw["full"],
    )
    if show_sql:
        click.echo(search_sql(result))
    elif as_json:
        _echo_json(result.to_dict())
    else:
        click.echo(search_text(result))


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """What is indexed: roots, counts, sizes, and files that could not be indexed.

    Example:

        memdex status --json
    """
    from .render import status_text
    from .status import status as get_status

    info = get_status(_connect(ctx, create=False), ctx.obj)
    click.echo(_dumps(info) if as_json else status_text(info))


def _dumps(data: Any) -> str:
    from .render import to_json

    return to_json(data)


@cli.command()
def kinds() -> None:
    """List the source kinds memdex can read.

    Example:

        memdex kinds
    """
    from .ingest import SOURCES

    for kind in SOURCES.values():
        click.echo(f"{kind.name:10} {kind.description}")


@cli.command()
@click.option(
    "--keep", type=click.Path(dir_okay=False), help="Write the demo index here instead of a temporary file."
)
def demo(keep: str | None) -> None:
    """Index the small sample corpus shipped with memdex and run a few searches.

    Nothing outside a temporary folder is written (or --keep FILE).

    Example:

        memdex demo
    """
    from .demo import run_demo

    run_demo(click.echo, keep=Path(keep) if keep else None)


@cli.group()
def synonyms() -> None:
    """Edit the synonym table used by layers 2 and 4.

    Example:

        memdex synonyms add k8s kubernetes kube
    """


@synonyms.command("list")
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def synonyms_list(ctx: click.Context, as_json: bool) -> None:
    """List synonym groups, one per line (the format `import` reads).

    Example:

        memdex synonyms list > my-synonyms.txt
    """
    from . import synonyms as syn
    from .render import synonyms_text

    groups = syn.groups(_connect(ctx))
    click.echo(_dumps(groups) if as_json else synonyms_text(groups))


@synonyms.command("add")
@click.argument("term")
@click.argument("words", nargs=-1, required=True)
@click.pass_context
def synonyms_add(ctx: click.Context, term: str, words: tuple[str, ...]) -> None:
    """Add WORDS as synonyms of TERM (both directions).

    Example:

        memdex synonyms add postgres postgresql pg psql
    """
    from . import synonyms as syn

    added = syn.add(_connect(ctx), term, list(words))
    click.echo(f"Added {added} synonym{'s' if added != 1 else ''} to {term.casefold()}.")


@synonyms.command("remove")
@click.argument("term")
@click.argument("words", nargs=-1)
@click.pass_context
def synonyms_remove(ctx: click.Context, term: str, words: tuple[str, ...]) -> None:
    """Remove WORDS from TERM's group, or the whole group if no WORDS are given.

    Example:

        memdex synonyms remove memory slot
    """
    from . import synonyms as syn

    removed = syn.remove(_connect(ctx), term, list(words))
    if not removed:
        raise _Failure(f"No synonyms of {term!r} to remove{': ' + ', '.join(words) if words else ''}.")
    click.echo(f"Removed {removed} synonym{'s' if removed != 1 else ''}.")


@synonyms.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def synonyms_import(ctx: click.Context, file: Path) -> None:
    """Add the groups of FILE: lines of `term: synonym, synonym`, or a JSON object.

    Example:

        memdex synonyms import team-synonyms.txt
    """
    from . import synonyms as syn

    added = syn.import_file(_connect(ctx), file)
    click.echo(f"Imported {added} new synonym{'s' if added != 1 else ''} from {file}.")
