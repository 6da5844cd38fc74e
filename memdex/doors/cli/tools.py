"""memdex synonyms, memdex kinds, memdex demo."""

from __future__ import annotations

from pathlib import Path

import click

from memdex.doors.cli import Failure, cli, connect, echo_json


@cli.command()
@click.option("--json", "as_json", is_flag=True, help="Print the kinds and their locations as JSON.")
def kinds(as_json: bool) -> None:
    """List the source kinds memdex can read, and where each coding agent keeps its sessions
    by default ("found": that folder exists here; `memdex index --agents` indexes those).

    Example:

        memdex kinds
    """
    from memdex.ingest import sources
    from memdex.ingest.locations import agent_locations

    where: dict[str, list[dict[str, object]]] = {}
    for entry in agent_locations():
        where.setdefault(entry["kind"], []).append(entry)
    if as_json:
        listed = [
            {"name": k.name, "description": k.description, "locations": where.get(k.name, [])}
            for k in sources().values()
        ]
        echo_json(listed)
        return
    width = max(len(k.name) for k in sources().values()) + 2  # the longest name (claude-code) lines up too
    for kind in sources().values():
        click.echo(f"{kind.name:{width}}{kind.description}")
        for entry in where.get(kind.name, []):
            click.echo(f"{'':{width}}default: {entry['location']}{' (found)' if entry['exists'] else ''}")


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
    from memdex.doors.demo import run_demo

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
    from memdex.doors.render import synonyms_text
    from memdex.query import synonyms as syn

    groups = syn.groups(connect(ctx, create=False, readonly=True))
    echo_json(groups) if as_json else click.echo(synonyms_text(groups))


@synonyms.command("add")
@click.argument("term")
@click.argument("words", nargs=-1, required=True)
@click.pass_context
def synonyms_add(ctx: click.Context, term: str, words: tuple[str, ...]) -> None:
    """Add WORDS as synonyms of TERM (both directions).

    Example:

        memdex synonyms add postgres postgresql pg psql
    """
    from memdex.query import synonyms as syn

    added = syn.add(connect(ctx), term, list(words))
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
    from memdex.query import synonyms as syn

    removed = syn.remove(connect(ctx), term, list(words))
    if not removed:
        raise Failure(f"No synonyms of {term!r} to remove{': ' + ', '.join(words) if words else ''}.")
    click.echo(f"Removed {removed} synonym{'s' if removed != 1 else ''}.")


@synonyms.command("import")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def synonyms_import(ctx: click.Context, file: Path) -> None:
    """Add the groups of FILE: lines of `term: synonym, synonym`, or a JSON object.

    Example:

        memdex synonyms import team-synonyms.txt
    """
    from memdex.query import synonyms as syn

    added = syn.import_file(connect(ctx), file)
    click.echo(f"Imported {added} new synonym{'s' if added != 1 else ''} from {file}.")
