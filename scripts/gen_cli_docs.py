#!/usr/bin/env python3
"""Write docs/cli.md from the commands' own --help, so the reference cannot drift.

tests/test_docs.py fails when docs/cli.md differs from what this script would write.

Example:

    python scripts/gen_cli_docs.py          # rewrite docs/cli.md
    python scripts/gen_cli_docs.py --check  # exit 1 if it is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

import click
from click.testing import CliRunner

from memdex.doors.cli import cli

TARGET = Path(__file__).resolve().parent.parent / "docs" / "cli.md"


def commands(group: click.Group, prefix: list[str]) -> list[list[str]]:
    out = []
    ctx = click.Context(group)
    for name in sorted(group.list_commands(ctx)):
        command = group.get_command(ctx, name)
        out.append([*prefix, name])
        if isinstance(command, click.Group):
            out += commands(command, [*prefix, name])
    return out


def render() -> str:
    runner = CliRunner()
    parts = [
        "# memdex command reference",
        "",
        "Generated from each command's `--help` by `python scripts/gen_cli_docs.py`; do not edit by hand.",
        "",
        "```",
        runner.invoke(cli, ["--help"], prog_name="memdex", terminal_width=100).output.rstrip(),
        "```",
    ]
    for path in commands(cli, []):
        help_text = runner.invoke(cli, [*path, "--help"], prog_name="memdex", terminal_width=100).output
        parts += ["", f"## memdex {' '.join(path)}", "", "```", help_text.rstrip(), "```"]
    return "\n".join(parts) + "\n"


@click.command()
@click.option("--check", is_flag=True, help="Exit 1 if docs/cli.md is out of date; write nothing.")
def main(check: bool) -> None:
    """Regenerate docs/cli.md from --help.

    Example:

        python scripts/gen_cli_docs.py --check
    """
    text = render()
    if check:
        if TARGET.read_text() != text:
            click.echo(f"{TARGET} is out of date: run python scripts/gen_cli_docs.py", err=True)
            sys.exit(1)
        return
    TARGET.write_text(text)
    click.echo(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
