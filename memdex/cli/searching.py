"""memdex search."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import click

from . import cli, connect, echo_json


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
    from ..query import Filters

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
    type=click.File("rb"),
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
    from ..query import search as run_search
    from ..render import search_sql, search_text

    if batch is not None:
        from ..batch import run_batch

        for line in run_batch(connect(ctx, create=False, readonly=True), batch):
            click.echo(json.dumps(line, ensure_ascii=False, default=str))
        return
    if query is None:
        raise click.UsageError("Give a QUERY, or --batch FILE.")
    result = run_search(
        connect(ctx, create=False, readonly=True),
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
        echo_json(result.to_dict())
    else:
        click.echo(search_text(result))
