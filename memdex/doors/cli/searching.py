"""memdex search."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import click

from memdex.answer.claude import DEFAULT_MODEL
from memdex.answer.modes import MODES
from memdex.doors.cli import Failure, cli, connect, echo_json
from memdex.errors import MemdexError

if TYPE_CHECKING:
    from memdex.query.request import SearchRequest


class _Granularity(click.Choice):  # type: ignore[type-arg]
    "chat or chunk; ``doc``, memdex's old name for chat, still works (not listed in --help)."

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        return super().convert("chat" if value == "doc" else value, param, ctx)


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
            type=_Granularity(["chat", "chunk"]),
            default="chat",
            show_default=True,
            help="One result per chat or document (doc: the same), or per matching chunk.",
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
        click.option(
            "--platform", help="Only chats from this platform, e.g. chatgpt, claude, claude-code, codex."
        ),
        click.option(
            "--project",
            help="Only agent sessions run in this folder: its path, or its last part(s), e.g. memdex.",
        ),
        click.option("--branch", help="Only agent sessions on this git branch."),
        click.option("--since", help="Only documents dated on or after YYYY[-MM[-DD]]."),
        click.option("--until", help="Only documents dated on or before YYYY[-MM[-DD]]."),
        click.option("--no-synonyms", is_flag=True, help="Skip layers 2 and 4 (synonym expansion)."),
        click.option(
            "--fix-typos",
            is_flag=True,
            help="Search the nearest indexed words for words no document holds (else only suggested, "
            "unless nothing matched).",
        ),
        click.option(
            "--raw", is_flag=True, help="QUERY is FTS5 syntax (AND, OR, NEAR, prefix*), used as is."
        ),
        click.option("--full", is_flag=True, help="Include each result's text in --json output."),
        click.option(
            "--semantic/--no-semantic",
            default=None,
            help="Search by meaning too (default: on when the index has vectors; see memdex embed).",
        ),
    ]
    for option in reversed(options):
        f = option(f)
    return f


def request_from(query: str, kw: dict[str, Any]) -> SearchRequest:
    "The search request the shared options describe."
    from memdex.query.request import Filters, SearchRequest

    filters = Filters(
        kinds=list(kw["kinds"]),
        namespace=kw["namespace"],
        type=kw["doc_type"],
        scope=kw["scope"],
        platform=kw["platform"],
        project=kw["project"],
        branch=kw["branch"],
        tags=list(kw["tags"]),
        since=kw["since"],
        until=kw["until"],
    )
    return SearchRequest(
        query,
        limit=kw["limit"],
        granularity=kw["granularity"],
        max_tokens=kw["max_tokens"],
        use_synonyms=not kw["no_synonyms"],
        raw=kw["raw"],
        filters=filters,
        full_text=kw["full"],
        semantic=kw["semantic"],
        fix_typos=kw["fix_typos"],
    )


def answer_options(f: Callable[..., Any]) -> Callable[..., Any]:
    "Options of answer mode, refinement and the files a query can write."
    options = [
        click.option(
            "--rounds",
            type=click.IntRange(1, 3),
            help="Search rounds, each refined from the last (default: 3 in answer mode, 1 in search mode).",
        ),
        click.option("--llm-refine", is_flag=True, help="Claude proposes each next round's search terms."),
        click.option(
            "--min-relevance",
            type=click.FloatRange(0, 1),
            help="Answers send only sources this relevant, unless none is (default 0.5; 0 sends all that fit).",
        ),
        click.option(
            "--no-llm", is_flag=True, help="Answer extractively, without calling Claude even if a key is set."
        ),
        click.option(
            "--model",
            help=f"Claude model for answers (default: $MEMDEX_MODEL, else {DEFAULT_MODEL}).",
        ),
        click.option(
            "--timeout",
            type=click.FloatRange(min=0, min_open=True),
            help="Seconds to wait for Claude before answering without it (default 60).",
        ),
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


@cli.command()
@click.argument("query", required=False)
@search_options
@click.option(
    "--mode",
    type=click.Choice(MODES),
    default="search",
    show_default=True,
    help="search: a ranked list; answer: a cited answer (memdex ask); auto: from the wording.",
)
@answer_options
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
    mode: str,
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

        for line in run_batch(connect(ctx, create=False, readonly=True), batch):
            click.echo(json.dumps(line, ensure_ascii=False, default=str))
        return
    if query is None:
        raise click.UsageError("Give a QUERY, or --batch FILE.")
    _run(ctx, query, mode, as_json, show_sql, kw)


@cli.command()
@click.argument("question")
@search_options
@answer_options
@click.option("--json", "as_json", is_flag=True, help="Print the answer, its sources and rounds as JSON.")
@click.pass_context
def ask(ctx: click.Context, question: str, as_json: bool, **kw: Any) -> None:
    """Answer a question from the index, citing its sources (search --mode answer).

    With ANTHROPIC_API_KEY set, Claude writes the answer from the best passages; without
    it, offline, or when the API fails, the answer is quoted from the sources and says so.

    Example:

        memdex ask "What problems have we had with ChatGPT?"
    """
    _run(ctx, question, "answer", as_json, False, kw)


def _run(
    ctx: click.Context, query: str, mode: str, as_json: bool, show_sql: bool, kw: dict[str, Any]
) -> None:
    from memdex.answer.claude import Settings
    from memdex.doors.dispatch import deliver, run

    conn = connect(ctx, create=False, readonly=True)
    outcome = run(
        conn,
        request_from(query, kw),
        mode=mode,
        rounds=kw["rounds"],
        use_llm=not kw["no_llm"],
        llm_refine=kw["llm_refine"],
        min_relevance=kw["min_relevance"],
        settings=Settings.from_env(model=kw["model"], timeout=kw["timeout"]),
    )
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
