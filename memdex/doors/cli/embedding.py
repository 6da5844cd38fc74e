"""memdex embed: vectors for search by meaning."""

from __future__ import annotations

import click

from memdex.doors.cli import Failure, cli, connect, echo_json
from memdex.query.meaning.model import (
    DEFAULT_MODEL,
    DEFAULT_PRECISION,
    MODEL_ENV,
    PRECISION_ENV,
    PRECISIONS,
    check_precision,
)
from memdex.query.meaning.windows import COVERAGES, DEFAULT_COVERAGE


@cli.command()
@click.option(
    "--model",
    envvar=MODEL_ENV,
    default=DEFAULT_MODEL,
    show_default=True,
    help="Model folder, or a Hugging Face name found in its cache ($MEMDEX_EMBED_MODEL).",
)
@click.option(
    "--precision",
    type=click.Choice(PRECISIONS),
    envvar=PRECISION_ENV,
    help="How the model runs: int8 (a third less CPU) or fp32; docs/benchmarks.md compares them. "
    f"Default: what the index has, else {DEFAULT_PRECISION} (${PRECISION_ENV}).",
)
@click.option(
    "--coverage",
    type=click.Choice(COVERAGES),
    help="What of each chunk the model reads: first (its opening, 128 word pieces) or whole (all of it, "
    "in windows of 128; a chunk scores its best); docs/benchmarks.md compares them. "
    f"Default: what the index has, else {DEFAULT_COVERAGE}.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(min=1),
    help="Texts per model run (default: texts of one length, about 256 word pieces a run).",
)
@click.option("--threads", type=click.IntRange(min=1), help="Model runs at once (default: one per core).")
@click.option(
    "--drop", is_flag=True, help="Remove the vectors instead (of --model if given, else of every model)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option(
    "-q", "--quiet", is_flag=True, help="No progress and no summary (--json still prints its report)."
)
@click.pass_context
def embed(
    ctx: click.Context,
    model: str,
    precision: str | None,
    coverage: str | None,
    batch_size: int | None,
    threads: int | None,
    drop: bool,
    as_json: bool,
    quiet: bool,
) -> None:
    """Give every chunk a vector, so searches find by meaning as well as words.

    Needs the semantic extra (pip install '.[semantic]' from a clone). With no --model,
    all-MiniLM-L6-v2 from the Hugging Face cache, downloaded the first time; offline, a
    folder holding a model's files (--model DIR or $MEMDEX_EMBED_MODEL).
    Resumable: a run that is stopped keeps what it wrote, and the next one goes on from
    there; chunks that already have a vector of this model are skipped. `memdex watch`
    embeds new and changed chunks itself once an index has vectors, and searches encode
    their query at the precision the vectors were made at. A long run shows its progress
    on stderr: a line redrawn on a terminal, else a line every 5 seconds
    ($MEMDEX_PROGRESS_SECONDS) with the rate and the time left.

    Example:

        memdex embed --model ~/models/all-MiniLM-L6-v2
    """
    from memdex.query.meaning import available

    conn = connect(ctx, create=False)
    if drop:
        from memdex.query.meaning.embed import drop as drop_vectors

        chosen = model if _given(ctx, "model") else None
        # Either precision's vectors of the model, unless one was asked for.
        precisions = [precision] if precision else list(PRECISIONS)
        names = [_model_name(chosen, p) for p in precisions] if chosen else []
        removed = sum(drop_vectors(conn, name) for name in names) if names else drop_vectors(conn, None)
        name = ", ".join(names) or None
        if as_json:
            echo_json({"dropped": removed, "model": name})
        elif not quiet:
            click.echo(f"Removed {removed:,} vectors" + (f" of {name}" if name else ""))
        return
    missing = available()
    if missing:
        raise Failure(f"Search by meaning needs the semantic extra: {missing}.")
    from memdex.doors.progress import shown
    from memdex.query.meaning.embed import embed_index

    with shown("Embedding", "chunks", quiet) as progress:
        report = embed_index(
            conn,
            model,
            precision=precision,
            coverage=coverage,
            batch_size=batch_size,
            threads=threads,
            progress=progress,
        )
    if as_json:
        echo_json(report.to_dict())
    elif not quiet:
        click.echo(
            f"{report.embedded:,} chunks embedded, {report.reused:,} reused, {report.removed:,} stale "
            f"vectors removed in {report.seconds:.1f} s · model {report.model}"
        )


def _given(ctx: click.Context, name: str) -> bool:
    "Was the option given (on the command line or by its environment variable)?"
    return ctx.get_parameter_source(name) != click.core.ParameterSource.DEFAULT


def _model_name(model: str, precision: str) -> str:
    "The stored name of a model given by folder or hub name (what its vectors are keyed by)."
    from memdex.query.meaning.embed import vector_model
    from memdex.query.meaning.model import load_spec, resolve_model

    return vector_model(load_spec(resolve_model(model), precision=check_precision(precision)))
