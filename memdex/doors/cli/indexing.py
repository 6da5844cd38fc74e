"""memdex index, memdex watch, memdex status: the commands that write or describe the index."""

from __future__ import annotations

import logging
import os
import shutil
import sys
from pathlib import Path

import click

from memdex.doors.cli import Failure, cli, connect, echo_json
from memdex.store import db


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
@click.option(
    "--chunk-tokens",
    type=click.IntRange(min=50),
    help="Chunk size bound in estimated tokens (default: 800 for markdown, 350 for chats); remembered per root.",
)
@click.option(
    "--keep-deleted/--no-keep-deleted",
    default=None,
    help="Keep the documents of files deleted from these PATHs, marked 'source deleted' "
    "(default: only agents' session logs); remembered per root.",
)
@click.option(
    "--keep-secrets/--mask-secrets",
    default=None,
    help="Index the secrets in these PATHs as they were typed, instead of masking them "
    "(the default: API keys, tokens, private keys and passwords become [secret:KIND], see "
    "docs/secrets.md); remembered per root.",
)
@click.option(
    "--agents",
    is_flag=True,
    help="Also index the coding agents' session folders that exist in their default "
    "locations (`memdex kinds` lists them); says which it found.",
)
@click.option(
    "--semantic/--no-semantic",
    default=None,
    help="Then give new chunks vectors for search by meaning, with the index's model or the one "
    "memdex ships (the default, unless $MEMDEX_INDEX_SEMANTIC=0); --no-semantic: words only.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress, no summary, no notes: only new problems.")
@click.pass_context
def index(
    ctx: click.Context,
    paths: tuple[str, ...],
    kind: str | None,
    scope: str | None,
    max_file_size: float | None,
    chunk_tokens: int | None,
    keep_deleted: bool | None,
    keep_secrets: bool | None,
    agents: bool,
    semantic: bool | None,
    as_json: bool,
    quiet: bool,
) -> None:
    """Index files and folders (every root indexed before, if no PATH is given).

    Unchanged files cost a stat; changed ones are replaced whole; deleted ones disappear --
    except agents' session logs (Claude Code deletes its own after 30 days), or every file
    of a root indexed with --keep-deleted: those stay searchable, marked 'source deleted'
    (`memdex roots purge-deleted` drops them). A file that moved is not deleted.
    Secrets (API keys, tokens, private keys, passwords) are masked before they are indexed,
    unless a root is indexed with --keep-secrets.
    Files that cannot be read are skipped, recorded and listed on stderr -- once: a problem
    found by an earlier run, in a file unchanged since, is counted in one line and listed
    by `memdex status`. A root that is gone is a warning (`memdex roots remove` forgets
    it). A symlink is indexed as what it points to, once. If `memdex watch` is running, it
    does the indexing and this command prints its report. A long run shows its progress on
    stderr: a line redrawn on a terminal, else a line every 5 seconds ($MEMDEX_PROGRESS_SECONDS)
    with the rate and the time left.

    Once the words are searchable, new chunks get vectors for search by meaning, newest
    first, offline, with the model memdex ships (or the one `memdex embed --model` chose).
    Stopping then (Ctrl-C) keeps the words and the vectors made so far; the next run, `memdex
    embed` or the watcher goes on from there. A running `memdex watch` embeds in the
    background instead. --no-semantic (or $MEMDEX_INDEX_SEMANTIC=0) keeps to words.

    Exit codes: 0 the run succeeded (known problems included); 1 it found new problems
    (listed on stderr), or the index could not be written; 2 bad usage: an unknown --kind,
    or a PATH that is a file no kind reads (`memdex kinds`).

    Example:

        memdex index ~/.claude/mnemonic ./.serena/memories

        memdex index --agents
    """
    from memdex.doors.progress import shown
    from memdex.doors.render import index_notices, index_text, meaning_text, skipped_text
    from memdex.watch.handoff import index_exclusive

    if agents:
        paths = (*paths, *_agent_folders(kind, quiet))
    if not paths:
        conn = connect(ctx)
        remembered = conn.execute(db.query("root_paths")).fetchall()
        conn.close()
        if not remembered:
            raise click.UsageError(
                "Nothing to index yet: give a PATH, e.g. `memdex index ~/notes`, or "
                "`memdex index --agents` for the coding agents' sessions on this machine."
            )
        for told, flag in ((keep_deleted, "--keep-deleted"), (keep_secrets, "--keep-secrets")):
            if told is not None:
                flag = (
                    flag
                    if told
                    else flag.replace("--keep-", "--no-keep-" if "deleted" in flag else "--mask-")
                )
                raise click.UsageError(f"{flag} is remembered per root: give the PATHs it is for.")
    if keep_secrets:
        click.echo(
            "memdex: warning: --keep-secrets: the API keys, tokens and passwords in these roots are "
            "indexed as typed, and every search, `memdex show` and `memdex serve --http` can hand "
            "them out; `--mask-secrets` masks them again.",
            err=True,
        )
    request = {
        "paths": [os.path.abspath(p) for p in paths],
        "kind": kind,
        "scope": scope,
        "max_file_size": int(max_file_size * 1024 * 1024) if max_file_size else None,
        "chunk_tokens": chunk_tokens,
        "keep_deleted": keep_deleted,
        "keep_secrets": keep_secrets,
    }
    handed: list[dict[str, object]] = []

    def handoff(holder: dict[str, object]) -> None:
        handed.append(holder)
        click.echo(f"memdex watch (pid {holder.get('pid')}) is running: it does this indexing.", err=True)

    with shown("Indexing", "files", quiet) as progress:
        report = index_exclusive(ctx.obj, request, progress=progress, on_handoff=handoff)
    problems = any(not s["known"] for s in report["skipped"])
    if not as_json:  # what the words' run did, before the vectors: a stop while embedding keeps it said
        if not quiet:
            click.echo(index_text(report))
            for line in index_notices(report):
                click.echo(line, err=True)
        if problems:
            click.echo(skipped_text(report), err=True)
    if semantic is None:
        from memdex.query.meaning import vectors_follow

        semantic = vectors_follow()
    if semantic and not handed:  # a watcher embeds what it wrote itself
        report["semantic"] = _embed_new(ctx, quiet or as_json, 1 if problems else 0)
        if not as_json and not quiet:
            click.echo(meaning_text(report["semantic"]))
    if as_json:
        echo_json(report)
    if problems:
        ctx.exit(1)


def _embed_new(ctx: click.Context, quiet: bool, code: int) -> dict[str, object]:
    """Vectors for the chunks that have none (query.meaning.embed_after_index); its report.
    Ctrl-C stops it with exit code 130, or ``code`` when the words' run found new problems."""
    from memdex.doors.progress import shown
    from memdex.query.meaning import embed_after_index

    conn = connect(ctx)
    try:
        with shown("Embedding", "chunks", quiet) as progress:
            return embed_after_index(conn, progress)
    except KeyboardInterrupt:
        click.echo(
            "memdex: stopped embedding; the words are searchable, and the vectors made so far are "
            "kept: `memdex index` or `memdex embed` goes on from there.",
            err=True,
        )
        ctx.exit(code or 130)
    finally:
        conn.close()


def _agent_folders(kind: str | None, quiet: bool) -> list[str]:
    "The agents' default session folders that exist here, each said on stderr (unless quiet)."
    from memdex.ingest.locations import agent_locations

    if kind:
        raise click.UsageError("--agents indexes each agent's folder as its own kind: leave --kind out.")
    places = agent_locations()
    found = [p for p in places if p["exists"]]
    if not found:
        looked = ", ".join(p["path"] for p in places)
        raise Failure(f"No coding agent's sessions were found here; looked in {looked}.")
    for place in found if not quiet else []:
        click.echo(f"Found {place['kind']} sessions in {place['path']}", err=True)
    return [place["path"] for place in found]


@cli.command()
@click.argument("roots", nargs=-1, type=click.Path(exists=True, file_okay=True, dir_okay=True))
@click.option("--kind", help="Source kind for new ROOTs (see `memdex kinds`).")
@click.option("--scope", type=click.Choice(["user", "project"]), help="Scope for new ROOTs.")
@click.option(
    "--debounce",
    type=click.FloatRange(0.01, 10.0),
    default=0.15,
    show_default=True,
    help="Seconds of quiet that end a burst of changes.",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also log to this file (the log goes to stderr).",
)
@click.option(
    "--install",
    type=click.Choice(["systemd", "launchd"]),
    help="Print a service definition that runs this watcher, and exit.",
)
@click.pass_context
def watch(
    ctx: click.Context,
    roots: tuple[str, ...],
    kind: str | None,
    scope: str | None,
    debounce: float,
    log_file: Path | None,
    install: str | None,
) -> None:
    """Keep the index current as files change, and answer its searches, until stopped (Ctrl-C
    or SIGTERM).

    Watches every indexed root, and ROOTs, which it indexes first. On start it catches up
    with what changed while it was off. New chunks get their vectors in the background,
    newest first ($MEMDEX_INDEX_SEMANTIC=0: words only). Only one writer runs per index: a
    second watcher is refused, and `memdex index` hands its work to this one. It is the
    same process as `memdex serve` without --http: `memdex search`, `ask` and `show` are
    answered by it, with the model and vectors already loaded. Exit code 0 on SIGTERM, 130
    on Ctrl-C. `memdex status` shows what it is doing.

    Example:

        memdex watch ~/.claude/mnemonic --log-file ~/.local/state/memdex-watch.log
    """
    from memdex.watch import service, units

    if install:  # paths resolved: the service starts in another folder
        command = [*_self_command(), "--db", str(ctx.obj), "watch", *(os.path.realpath(r) for r in roots)]
        command += [*(["--kind", kind] if kind else []), *(["--scope", scope] if scope else [])]
        text = (
            units.systemd_unit(command, log_file)
            if install == "systemd"
            else units.launchd_plist(command, log_file)
        )
        click.echo(text, nl=False)
        click.echo(units.INSTALL_HINTS[install], err=True)
        return
    if not roots:
        conn = connect(ctx)
        remembered = conn.execute(db.query("root_paths")).fetchall()
        conn.close()
        if not remembered:
            raise click.UsageError("Nothing to watch yet: give a ROOT, or run `memdex index PATH` first.")
    from memdex.doors.serve.server import Server, run

    _log_to(log_file)
    watcher = service.WatchService(
        ctx.obj, [Path(os.path.abspath(r)) for r in roots], debounce=debounce, kind=kind, scope=scope
    )
    ctx.exit(run(Server(ctx.obj, watcher=watcher, command="watch")))  # `memdex serve` without --http


def _self_command() -> list[str]:
    "How to start this memdex again: its console script, else this Python with -m memdex."
    found = shutil.which("memdex")
    return [os.path.abspath(found)] if found else [sys.executable, "-m", "memdex"]


def _log_to(log_file: Path | None) -> None:
    handlers: list[logging.Handler] = [logging.StreamHandler(sys.stderr)]
    if log_file:
        log_file.parent.mkdir(parents=True, exist_ok=True)
        handlers.append(logging.FileHandler(log_file))
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s", handlers=handlers, force=True
    )


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def status(ctx: click.Context, as_json: bool) -> None:
    """What is indexed, whether a watcher runs, and files that could not be indexed.

    Example:

        memdex status --json
    """
    from memdex.doors.render import status_text
    from memdex.doors.status import status as get_status

    info = get_status(connect(ctx, create=False, readonly=True), ctx.obj)
    echo_json(info) if as_json else click.echo(status_text(info))
