"""memdex search."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from memdex.answer.claude import DEFAULT_MODEL
from memdex.doors.cli import Failure, cli, connect, echo_json, engine
from memdex.errors import MemdexError

if TYPE_CHECKING:
    from memdex.query.options import Asked


class _Choice(click.Choice):  # type: ignore[type-arg]
    """The option's choices, and its unlisted ones taken as they are but not shown in --help
    (granularity ``doc``, memdex's old name for chat: the request reads it so)."""

    def __init__(self, choices: tuple[str, ...], unlisted: tuple[str, ...]) -> None:
        super().__init__(list(choices))
        self.unlisted = unlisted

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return value if value in self.unlisted else super().convert(value, param, ctx)


def search_options(f: Callable[..., Any], leave_out: tuple[str, ...] = ()) -> Callable[..., Any]:
    "Every search option of the table (``query.options``), then the files a query can write."
    from memdex.query.options import OPTIONS

    options = [_click_option(o) for o in OPTIONS if o.name not in leave_out] + [
        click.option(
            "--output-file",
            type=click.Path(),
            help="Also write the output as markdown to FILE (.md; never over a file memdex did not write), or to a new timestamped file in a folder.",
        ),
        click.option(
            "--retrieve",
            "retrieve_dir",
            type=click.Path(file_okay=False),
            help="Copy the results' files (cited ones in answer mode) into DIR, with manifest.json.",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def _click_option(o: Any) -> Callable[..., Any]:
    "The click option of one row of the option table: its flag, type, default and help."
    flags = [o.short, o.cli] if o.short else [o.cli]
    settings: dict[str, Any] = {"help": o.help.format(default_model=DEFAULT_MODEL)}
    if o.kind is bool:
        if "/" in o.cli:
            settings["default"] = o.default
        else:
            settings.update(is_flag=True, flag_value=not o.negated, default=o.default)
    elif o.kind is list:
        settings["multiple"] = True
    else:
        settings.update(type=_click_type(o), default=o.default, show_default=o.default is not None)
    return click.option(*flags, o.name, **settings)


def _click_type(o: Any) -> Any:
    if o.choices:
        return _Choice(o.choices, o.unlisted)
    if o.kind is int:
        return click.IntRange(min=o.low, max=o.high)
    if o.kind is float:
        return click.FloatRange(min=o.low, max=o.high, min_open=o.low_open)
    return None


def asked(query: str, kw: dict[str, Any]) -> Asked:
    "What the options of the table ask, from click's keywords (the others are the command's own)."
    from memdex.query.options import find, parse

    return parse(query, {k: v for k, v in kw.items() if find(k) is not None})


@cli.command()
@click.argument("query", required=False)
@search_options
@click.option("--json", "as_json", is_flag=True, help="Print results as JSON.")
@click.option("--sql", "show_sql", is_flag=True, help="Print the SQL each layer ran, ready for sqlite3.")
@click.option(
    "--batch",
    type=click.File("rb"),
    help="Run the JSON lines of FILE (- for stdin) as searches; JSON lines out.",
)
@click.pass_context
def search(
    ctx: click.Context,
    query: str | None,
    as_json: bool,
    show_sql: bool,
    batch: Any,
    **kw: Any,
) -> None:
    """Search the index: topics first, then synonyms, then content.

    Dates alone ("October", "May 2026", "last week", "20 days ago") list what is dated
    then, newest first, with the themes of that time; with other words they filter them.
    Relative dates resolve against today, or the ISO date in $MEMDEX_NOW.

    A word no document holds gets a "did you mean" note with the nearest indexed words;
    --fix-typos searches those instead (as happens anyway when nothing matched).

    Example:

        memdex search "what did we decide about the cache?" --limit 5

        memdex search "flaky watcher test" --platform claude-code --project memdex
    """
    if batch is not None:
        from memdex.doors.batch import run_batch

        for line in run_batch(connect(ctx, create=False, readonly=True), batch, engine=engine(ctx)):
            click.echo(json.dumps(line, ensure_ascii=False, default=str))
        return
    if query is None:
        raise click.UsageError("Give a QUERY, or --batch FILE.")
    _run(ctx, asked(query, kw), as_json, show_sql, kw)


@cli.command()
@click.argument("question")
@functools.partial(search_options, leave_out=("mode",))
@click.option("--json", "as_json", is_flag=True, help="Print the answer, its sources and rounds as JSON.")
@click.pass_context
def ask(ctx: click.Context, question: str, as_json: bool, **kw: Any) -> None:
    """Answer a question from the index, citing its sources (search --mode answer).

    With ANTHROPIC_API_KEY set, Claude writes the answer from the best passages; without
    it, offline, or when the API fails, the answer is quoted from the sources and says so.

    Example:

        memdex ask "What problems have we had with ChatGPT?"
    """
    request = asked(question, kw)
    request.answer["mode"] = "answer"
    _run(ctx, request, as_json, False, kw)


def _run(ctx: click.Context, request: Asked, as_json: bool, show_sql: bool, kw: dict[str, Any]) -> None:
    from memdex.doors.dispatch import deliver, run

    conn = connect(ctx, create=False, readonly=True)
    outcome = run(conn, request.request, engine=engine(ctx), **request.answer)
    if outcome.answer is not None and not outcome.answer.sources:
        raise Failure(outcome.answer.summary)
    try:
        deliver(
            conn,
            outcome,
            output_file=kw["output_file"],
            retrieve_dir=kw["retrieve_dir"],
            max_tokens=kw["max_tokens"],
        )
    except MemdexError:
        _show(outcome, as_json, show_sql)  # the answer is not lost because a file could not be written
        raise
    _show(outcome, as_json, show_sql)


def _show(outcome: Any, as_json: bool, show_sql: bool) -> None:
    from memdex.doors.render import search_sql

    if show_sql:
        click.echo(search_sql(outcome.result))
    elif as_json:
        echo_json(outcome.to_dict())
    else:
        click.echo(outcome.text())
        if outcome.output_file:
            click.echo(f"\nWrote {outcome.output_file}", err=True)
        if outcome.retrieved is not None:
            r = outcome.retrieved
            click.echo(
                f"Retrieved {len(r['files'])} files (~{r['total_tokens']:,} tokens) into {r['folder']}"
                + (f"; skipped {len(r['skipped'])} (see manifest.json)" if r["skipped"] else ""),
                err=True,
            )
