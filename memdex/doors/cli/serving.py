"""memdex serve, memdex mcp, memdex datasette: the index for agents, teams and browsing."""

from __future__ import annotations

import json
import logging
import os
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
@click.option(
    "--save-tool",
    is_flag=True,
    help="search_knowledge_base writes no files; a fourth tool, save_results, does: for agents "
    "that run the search without asking (memdex setup writes it).",
)
@click.pass_context
def mcp(ctx: click.Context, http: bool, host: str, port: int, allow_remote: bool, save_tool: bool) -> None:
    """Serve the index to agents over MCP: search_knowledge_base, get_document, index_status.

    Runs over stdio (what MCP clients launch); --http serves streamable HTTP on loopback,
    refusing requests from other origins. Read-only: it never writes to the index. To add it
    to Claude Code: claude mcp add memdex -- memdex mcp --save-tool

    Example:

        memdex mcp --http --port 8765
    """
    _check_host(host, allow_remote)
    from memdex.doors.mcp_server import serve

    serve(ctx.obj, http=http, host=host, port=port, save_tool=save_tool)


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
@click.option("--read-only", is_flag=True, help="Serve without a watcher, writing nothing (a replica).")
@click.option("--http", is_flag=True, help="Also serve HTTP: JSON at /search, /show, /health; MCP at /mcp.")
@click.option("--host", default="127.0.0.1", show_default=True, help="Address for --http.")
@click.option(
    "--port",
    default=8765,
    show_default=True,
    type=click.IntRange(0, 65535),
    help="Port for --http (0: any free one; memdex status says which).",
)
@click.option(
    "--token-file",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="HTTP clients must send this file's token (Authorization: Bearer); needed off loopback.",
)
@click.option(
    "--tls-cert",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="Serve HTTPS with this certificate (PEM).",
)
@click.option(
    "--tls-key",
    type=click.Path(dir_okay=False, exists=True, path_type=Path),
    help="The private key of --tls-cert (PEM).",
)
@click.option(
    "--log-file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Also log to this file (the log goes to stderr).",
)
@click.option(
    "--install",
    type=click.Choice(["systemd", "launchd"]),
    help="Print a service definition that runs this server, and exit.",
)
@click.pass_context
def serve(
    ctx: click.Context,
    roots: tuple[str, ...],
    kind: str | None,
    scope: str | None,
    debounce: float,
    read_only: bool,
    http: bool,
    host: str,
    port: int,
    token_file: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
    log_file: Path | None,
    install: str | None,
) -> None:
    """Keep one process for the index: the watcher, the model and vectors loaded once, a
    socket beside the index that `memdex search`, `ask` and `show` use when it answers
    (the same output, without the start-up), until stopped (Ctrl-C or SIGTERM).

    --http also serves JSON (/search?q=..., /show?ref=..., /health) and MCP (/mcp),
    read-only. Loopback needs nothing; any other --host needs --token-file. --read-only
    serves an index another host writes (a Litestream replica: docs/serve.md).

    Example:

        memdex serve ~/.claude/mnemonic --http --port 8765
    """
    from memdex.doors.serve import auth

    token = auth.read_token(token_file) if token_file else None
    if http:
        auth.check_bind(host, token)
    if bool(tls_cert) != bool(tls_key):
        raise BadParameter("--tls-cert and --tls-key go together.")
    if read_only and (roots or kind or scope):
        raise BadParameter("--read-only writes nothing: give no ROOTs, --kind or --scope.")
    if install:
        _install(ctx, install, roots, log_file, token_file, tls_cert, tls_key)
        return
    from memdex.doors.cli.indexing import _log_to
    from memdex.doors.serve.server import Server, run

    _log_to(log_file)
    if http and not auth.is_loopback(host) and not tls_cert:
        logging.getLogger("memdex.doors.serve").warning(
            "serving HTTP on %s without TLS: the token travels in clear text; give --tls-cert and "
            "--tls-key, or put a TLS proxy in front (docs/serve.md)",
            host,
        )
    watcher = None
    if not read_only:
        from memdex.watch.service import WatchService

        paths = [Path(os.path.abspath(r)) for r in roots]
        watcher = WatchService(ctx.obj, paths, debounce=debounce, kind=kind, scope=scope)
    server = None
    if http:
        from memdex.doors.serve.http import HttpServer, HttpSettings

        server = HttpServer(ctx.obj, HttpSettings(host, port, token, tls_cert, tls_key))
    ctx.exit(run(Server(ctx.obj, watcher=watcher, http=server)))


def _install(
    ctx: click.Context,
    install: str,
    roots: tuple[str, ...],
    log_file: Path | None,
    token_file: Path | None,
    tls_cert: Path | None,
    tls_key: Path | None,
) -> None:
    "Print the unit: the command line again, with every path absolute (it starts elsewhere)."
    from memdex.doors.cli.indexing import _self_command
    from memdex.watch import units

    params = ctx.params
    command = [*_self_command(), "--db", str(ctx.obj), "serve", *(os.path.realpath(r) for r in roots)]
    for name in ("kind", "scope"):
        if params[name]:
            command += [f"--{name}", params[name]]
    if params["debounce"] != 0.15:
        command += ["--debounce", str(params["debounce"])]
    if params["read_only"]:
        command.append("--read-only")
    if params["http"]:
        command += ["--http", "--host", params["host"], "--port", str(params["port"])]
    for flag, path in (("--token-file", token_file), ("--tls-cert", tls_cert), ("--tls-key", tls_key)):
        if path:
            command += [flag, os.path.realpath(path)]
    text = (
        units.systemd_unit(command, log_file, service="serve")
        if install == "systemd"
        else units.launchd_plist(command, log_file, service="serve")
    )
    click.echo(text, nl=False)
    click.echo(units.install_hint(install, "serve"), err=True)
