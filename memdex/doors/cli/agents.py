"""memdex setup (an agent's configuration) and memdex context (what the index holds about a
folder: the Claude Code plugin's session-start hook)."""

from __future__ import annotations

import sys

import click

from memdex.doors.cli import cli, echo_json


@cli.command()
@click.argument("agent", type=click.Choice(["claude-code", "codex", "gemini"]))
@click.option("--print", "print_only", is_flag=True, help="Print the configuration instead of writing it.")
@click.option("--remove", is_flag=True, help="Take memdex out of the agent's configuration.")
@click.pass_context
def setup(ctx: click.Context, agent: str, print_only: bool, remove: bool) -> None:
    """Give a coding agent memdex: write its configuration with absolute paths to this memdex
    and this index (--db), merged into the file it has (a backup beside it).

    claude-code: the memdex plugin (MCP server, search skill and subagent, /memdex:search,
    /memdex:ask, session-start context) in ~/.claude/settings.json ($CLAUDE_CONFIG_DIR);
    codex: [mcp_servers.memdex] in ~/.codex/config.toml ($CODEX_HOME); gemini: mcpServers in
    ~/.gemini/settings.json. docs/agents.md says what each piece costs.

    Example:

        memdex setup codex --print
    """
    from memdex.agents.setup import apply, describe, plan

    if print_only and remove:
        raise click.UsageError("--print shows what setup would write; --remove takes it out: use one.")
    change = plan(agent, ctx.obj)
    if print_only:
        click.echo(change.snippet, nl=not change.snippet.endswith("\n"))
        click.echo(f"# {describe(change)}", err=True)
        return
    for line in apply(change, remove=remove):
        click.echo(line)


@cli.command()
@click.argument("folder", required=False, type=click.Path(file_okay=False))
@click.option(
    "--max-tokens", type=click.IntRange(min=40), default=300, show_default=True, help="Budget of the text."
)
@click.option(
    "--hook",
    is_flag=True,
    help="Claude Code's SessionStart hook: read its JSON on stdin, print the hook's JSON; nothing when the index is missing.",
)
@click.option("--json", "as_json", is_flag=True, help="Print what was found, and the text, as JSON.")
@click.pass_context
def context(ctx: click.Context, folder: str | None, max_tokens: int, hook: bool, as_json: bool) -> None:
    """What the index holds about a project folder (default: this one), within a token budget:
    its recent agent sessions, decisions and open threads said in them, its memories and notes.

    Example:

        memdex context ~/src/zebra-app --max-tokens 300
    """
    from memdex.agents.context import hook_folder, hook_output, project_context
    from memdex.errors import MemdexError
    from memdex.store import db

    if hook:
        where = folder or hook_folder(sys.stdin.read() if not sys.stdin.isatty() else "")
        try:
            conn = db.connect(ctx.obj, create=False, readonly=True)
        except MemdexError:
            return  # no index (or none readable): a session starts as if memdex were not there
        try:
            out = hook_output(project_context(conn, where, max_tokens).text)
        finally:
            conn.close()
        if out:
            click.echo(out)
        return
    from memdex.doors.cli import connect

    conn = connect(ctx, create=False, readonly=True)
    found = project_context(conn, folder or ".", max_tokens)
    conn.close()
    if as_json:
        echo_json(found.to_dict())
    elif found.text:
        click.echo(found.text)
    else:
        click.echo(f"The index holds nothing about {found.project}.", err=True)
