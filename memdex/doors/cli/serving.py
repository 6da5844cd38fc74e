"""memdex mcp, memdex datasette: the index for agents and for browsing."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import click

from memdex.doors.cli import BadParameter, Failure, cli

LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _check_host(host: str, allow_remote: bool) -> None:
    if host not in LOOPBACK and not allow_remote:
        raise BadParameter(
            f"--host {host} would serve your memories beyond this machine; pass --allow-remote if you "
            "mean it, or keep the default 127.0.0.1."
        )


@cli.command()
@click.option("--http", is_flag=True, help="Serve streamable HTTP at http://HOST:PORT/mcp instead of stdio.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address for --http.")
@click.option(
    "--port", default=8765, show_default=True, type=click.IntRange(1, 65535), help="Port for --http."
)
@click.option("--allow-remote", is_flag=True, help="Allow a --host other than loopback.")
@click.pass_context
def mcp(ctx: click.Context, http: bool, host: str, port: int, allow_remote: bool) -> None:
    """Serve the index to agents over MCP: search_knowledge_base, get_document, index_status.

    Runs over stdio (what MCP clients launch); --http serves streamable HTTP on loopback,
    refusing requests from other origins. Read-only: it never writes to the index. To add it
    to Claude Code: claude mcp add memdex -- memdex mcp

    Example:

        memdex mcp --http --port 8765
    """
    _check_host(host, allow_remote)
    from memdex.doors.mcp_server import serve

    serve(ctx.obj, http=http, host=host, port=port)


@cli.command()
@click.option("--host", default="127.0.0.1", show_default=True, help="Address to serve on.")
@click.option(
    "--port", default=8001, show_default=True, type=click.IntRange(0, 65535), help="Port (0: any free one)."
)
@click.option("--allow-remote", is_flag=True, help="Allow a --host other than loopback.")
@click.option("--metadata", "print_metadata", is_flag=True, help="Print the Datasette metadata and exit.")
@click.pass_context
def datasette(ctx: click.Context, host: str, port: int, allow_remote: bool, print_metadata: bool) -> None:
    """Browse the index in Datasette, read-only: search box, facets, canned queries per layer.

    Needs the datasette extra: pip install 'memdex[datasette]'.

    Example:

        memdex datasette --port 8001
    """
    from memdex.doors.datasette_app import metadata, serve

    db_path: Path = ctx.obj
    data = metadata(db_path)
    if print_metadata:
        click.echo(json.dumps(data, indent=2))
        return
    _check_host(host, allow_remote)
    if not db_path.exists():
        raise Failure(f"No index at {db_path}: run `memdex index PATH` first.")
    with tempfile.TemporaryDirectory(prefix="memdex-datasette-") as tmp:
        path = Path(tmp) / "metadata.json"
        path.write_text(json.dumps(data))
        serve(db_path, host, port, path)
