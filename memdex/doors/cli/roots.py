"""memdex roots: the folders and files the index remembers, forgetting one, and purging the
documents kept after their file was deleted."""

from __future__ import annotations

import sys

import click

from memdex.doors.cli import cli, connect, echo_json


@cli.group(invoke_without_command=True)
@click.option("--json", "as_json", is_flag=True, help="Print the roots as JSON.")
@click.pass_context
def roots(ctx: click.Context, as_json: bool) -> None:
    """List the roots: what `memdex index` and `memdex watch` keep current.

    Each root with its kind (`mixed` when it holds several), its files and documents, and
    its state: ok, errors (some files could not be indexed: `memdex status` lists them) or
    missing (the path is gone; its documents stay until it returns or is removed).

    Example:

        memdex roots --json
    """
    if ctx.invoked_subcommand is not None:
        return
    from memdex.doors.render import roots_text
    from memdex.doors.status import list_roots

    conn = connect(ctx, create=False, readonly=True)
    try:
        found = list_roots(conn)
    finally:
        conn.close()
    echo_json(found) if as_json else click.echo(roots_text(found))


@roots.command()
@click.argument("path", type=click.Path())
@click.option("-y", "--yes", is_flag=True, help="Do not ask first (nor is it asked when not on a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Print what was removed as JSON.")
@click.pass_context
def remove(ctx: click.Context, path: str, yes: bool, as_json: bool) -> None:
    """Forget a root: drop it with everything indexed from it (alias: forget).

    Its files, documents, chunks, full-text entries, vectors, topics and recorded problems
    go; the files themselves are not touched. PATH may be gone already (a root that moved),
    or name the root through a symlink. Asks first on a terminal; in a script, or with
    --yes, it does not. If `memdex watch` is running, it does the removal and stops
    watching the root.

    Example:

        memdex roots remove ~/old-notes --yes
    """
    from memdex.doors.render import forgotten_text
    from memdex.ingest.roots import describe_root
    from memdex.watch.handoff import forget_exclusive

    conn = connect(ctx, create=False)
    try:
        about = describe_root(conn, path)
    finally:
        conn.close()
    if not yes and sys.stdin.isatty():
        click.confirm(
            f"Forget {about['path']} and remove its {about['files']:,} files' "
            f"{about['documents']:,} documents from the index?",
            abort=True,
            err=True,
        )
    removed = forget_exclusive(
        ctx.obj,
        about["path"],
        on_handoff=lambda h: click.echo(
            f"memdex watch (pid {h.get('pid')}) is running: it does this removal.", err=True
        ),
    )
    echo_json(removed) if as_json else click.echo(forgotten_text(removed))


@roots.command("purge-deleted")
@click.argument("root", required=False, type=click.Path())
@click.option("-y", "--yes", is_flag=True, help="Do not ask first (nor is it asked when not on a terminal).")
@click.option("--json", "as_json", is_flag=True, help="Print what was purged as JSON.")
@click.pass_context
def purge_deleted(ctx: click.Context, root: str | None, yes: bool, as_json: bool) -> None:
    """Drop the documents kept after their file was deleted: of ROOT, or of every root.

    A root keeps them when it is indexed with --keep-deleted, and agents' session logs by
    default; search results mark them 'source deleted'. Their documents, chunks and full-text
    entries go; the root stays, and files still there are not touched. Asks first on a
    terminal; in a script, or with --yes, it does not. If `memdex watch` is running, it does
    the purge.

    Example:

        memdex roots purge-deleted ~/.claude/projects --yes
    """
    from memdex.doors.render import purged_text
    from memdex.ingest.departures import kept_deleted
    from memdex.watch.handoff import purge_exclusive

    conn = connect(ctx, create=False, readonly=True)
    try:
        about = kept_deleted(conn, root)
    finally:
        conn.close()
    if about["documents"] and not yes and sys.stdin.isatty():
        where = f" of {about['root']}" if about["root"] else ""
        click.confirm(
            f"Purge {about['documents']:,} documents{where} whose file was deleted from the index?",
            abort=True,
            err=True,
        )
    purged = purge_exclusive(
        ctx.obj,
        about["root"],
        on_handoff=lambda h: click.echo(
            f"memdex watch (pid {h.get('pid')}) is running: it does this purge.", err=True
        ),
    )
    echo_json(purged) if as_json else click.echo(purged_text(purged))


forget = click.Command(
    "forget",
    callback=remove.callback,
    params=remove.params,
    help="""Same as `memdex roots remove`: forget a root and all indexed from it.

    Example:

        memdex roots forget ~/old-notes --yes
    """,
)
roots.add_command(forget)
