"""memdex show."""

from __future__ import annotations

import re

import click

from memdex.doors.cli import cli, connect, echo_json


def _lines(value: str | None) -> tuple[int | None, int | None]:
    if not value:
        return None, None
    m = re.fullmatch(r"\s*(\d+)?\s*(?:-\s*(\d+)?)?\s*", value)
    if not m or not (m.group(1) or m.group(2)):
        raise click.BadParameter(
            f"{value!r} is not a line range: use 12-30, 12- or -30.", param_hint="--lines"
        )
    start = int(m.group(1)) if m.group(1) else None
    end = int(m.group(2)) if m.group(2) else (start if "-" not in value else None)
    return start, end


@cli.command()
@click.argument("ref")
@click.option(
    "--lines",
    help="Only these lines (1-based): 12-30, 12- or -30; a result's line_start-line_end "
    "(over a REF's own :12-30).",
)
@click.option(
    "--max-tokens", type=click.IntRange(min=1), help="Stop at a line boundary before this many tokens."
)
@click.option(
    "--resume",
    is_flag=True,
    help="Print the command that resumes this agent session (in its folder), not the text; it is not run.",
)
@click.option("--json", "as_json", is_flag=True, help="Print the text with its metadata as JSON.")
@click.pass_context
def show(
    ctx: click.Context, ref: str, lines: str | None, max_tokens: int | None, resume: bool, as_json: bool
) -> None:
    """Print a document (or some of its lines) named the way a search result names it.

    REF is an id, a key (chat_id), or a path: absolute, relative to this folder, through a
    symlink or not; what a result's read: line prints works as is (path:10-30 prints those
    lines, path (messages 3-7) those messages; path#KEY names one conversation of an export
    that holds many). Markdown is read from its file, with the
    file's own line numbers; a conversation is read from the index. With --resume, an agent
    session's way back in: `cd <its folder> && claude --resume <id>` and the like; exit 1
    for a document no agent resumes.

    Example:

        memdex show 42 --lines 10-30

        memdex show ~/notes/deploy.md:14-21

        memdex show 7 --resume
    """
    if resume:
        _resume(ctx, ref, as_json)
        return
    from memdex.query.documents import get_document

    start, end = _lines(lines)
    doc = get_document(
        connect(ctx, create=False, readonly=True), ref, line_start=start, line_end=end, max_tokens=max_tokens
    )
    if as_json:
        echo_json(doc)
        return
    if doc.get("source_deleted"):  # stderr, as the note below: stdout is the document's text alone
        click.echo(f"-- source deleted {doc['source_deleted'][:10]}: this is the indexed copy", err=True)
    click.echo(doc["text"], nl=not doc["text"].endswith("\n"))
    if doc["next_line"]:
        click.echo(
            f"-- lines {doc['line_start']}-{doc['line_end']} of {doc['total_lines']}; "
            f"more: memdex show {doc['id']} --lines {doc['next_line']}-",
            err=True,
        )


def _resume(ctx: click.Context, ref: str, as_json: bool) -> None:
    from memdex.doors.resume import resume_of

    found = resume_of(connect(ctx, create=False, readonly=True), ref)
    if as_json:
        echo_json(found)
        return
    if not found["cwd"]:  # the command alone may not find the session elsewhere: say so
        click.echo(
            f"-- {found['kind']} recorded no folder for this session: run it in the project's", err=True
        )
    click.echo(found["command"])
