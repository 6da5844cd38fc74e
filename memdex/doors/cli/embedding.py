"""memdex embed: vectors for search by meaning."""

from __future__ import annotations

import click

from memdex.doors.cli import Failure, cli, connect, echo_json, progress_bar


@cli.command()
@click.option(
    "--model",
    envvar="MEMDEX_EMBED_MODEL",
    default="sentence-transformers/all-MiniLM-L6-v2",
    show_default=True,
    help="Model folder, or a Hugging Face name found in its cache ($MEMDEX_EMBED_MODEL).",
)
@click.option(
    "--batch-size", type=click.IntRange(min=1), default=16, show_default=True, help="Texts per model run."
)
@click.option("--threads", type=click.IntRange(min=1), help="Cores the model may use (default: all).")
@click.option(
    "--drop", is_flag=True, help="Remove the vectors instead (of --model if given, else of every model)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.pass_context
def embed(
    ctx: click.Context, model: str, batch_size: int, threads: int | None, drop: bool, as_json: bool
) -> None:
    """Give every chunk a vector, so searches find by meaning as well as words.

    Needs the semantic extra (pip install 'memdex[semantic]') and the model's files on disk.
    Resumable: a run that is stopped keeps what it wrote, and the next one goes on from
    there; chunks that already have a vector of this model are skipped. `memdex watch`
    embeds new and changed chunks itself once an index has vectors.

    Example:

        memdex embed --model ../shared/data/models/all-MiniLM-L6-v2
    """
    from memdex.query.meaning import available

    conn = connect(ctx, create=False)
    if drop:
        from memdex.query.meaning.embed import drop as drop_vectors

        chosen = model if ctx.get_parameter_source("model") != click.core.ParameterSource.DEFAULT else None
        name = _model_name(chosen) if chosen else None
        removed = drop_vectors(conn, name)
        echo_json({"dropped": removed, "model": name}) if as_json else click.echo(
            f"Removed {removed:,} vectors" + (f" of {name}" if name else "")
        )
        return
    missing = available()
    if missing:
        raise Failure(f"Search by meaning needs the semantic extra: {missing}.")
    from memdex.query.meaning.embed import embed as embed_chunks
    from memdex.query.meaning.embed import passage_encoder
    from memdex.query.meaning.model import load_spec, resolve_model

    encoder = passage_encoder(load_spec(resolve_model(model)), batch_size=batch_size, threads=threads)
    report = embed_chunks(conn, encoder, progress=progress_bar("Embedding", min_total=50))
    if as_json:
        echo_json(report.to_dict())
    else:
        click.echo(
            f"{report.embedded:,} chunks embedded, {report.reused:,} reused, {report.removed:,} stale "
            f"vectors removed in {report.seconds:.1f} s · model {report.model}"
        )


def _model_name(model: str) -> str:
    "The stored name of a model given by folder or hub name (what its vectors are keyed by)."
    from memdex.query.meaning.embed import vector_model
    from memdex.query.meaning.model import load_spec, resolve_model

    return vector_model(load_spec(resolve_model(model)))
