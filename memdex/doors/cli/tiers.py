"""memdex lint, memdex keywords, memdex cost: keeping Serena tiered memory folders honest."""

from __future__ import annotations

from pathlib import Path

import click

from memdex.doors.cli import Failure, cli, connect, echo_json

folder_argument = click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))


def _serena_root(file: Path) -> Path:
    "The folder a memory file belongs to: the nearest one above it with a memory-index.md."
    for parent in file.resolve().parents:
        if (parent / "memory-index.md").is_file():
            return parent
    raise click.BadParameter(
        f"no folder above {file} has a memory-index.md: pass --root.", param_hint="--root"
    )


@cli.command()
@folder_argument
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
@click.option("--strict", is_flag=True, help="Warnings block too (exit 1).")
@click.option(
    "--min-unique",
    type=click.FloatRange(0, 1),
    default=0.4,
    show_default=True,
    help="Share of a row's keywords no other row of its index may use.",
)
@click.option(
    "--min-keywords",
    type=click.IntRange(min=1),
    default=10,
    show_default=True,
    help="A skill row with fewer keywords is a warning (routing rows are exempt).",
)
@click.option(
    "--max-keywords",
    type=click.IntRange(min=1),
    default=15,
    show_default=True,
    help="A skill row with more keywords is a warning.",
)
@click.option(
    "--ignore",
    "ignore",
    multiple=True,
    metavar="CODE",
    help="Leave a rule out, by its code (repeatable): --ignore atomic-format.",
)
def lint(
    path: Path,
    as_json: bool,
    strict: bool,
    min_unique: float,
    min_keywords: int,
    max_keywords: int,
    ignore: tuple[str, ...],
) -> None:
    """Check a Serena tiered memory folder: rows resolve, keywords are distinctive (10-15 per
    skill row), indexes are pure lookup tables, memory-index.md reaches every domain index,
    rows point at {domain}-{description} files, memories are atomic (no title, date/status
    line or parent pointer), no memory is orphaned.

    Exit 1 only on blocking findings (errors; with --strict, warnings too). Writes nothing.

    Example:

        memdex lint .serena/memories --ignore atomic-format --json
    """
    from memdex.serena.lint import lint as run_lint

    report = run_lint(
        path, min_unique=min_unique, min_keywords=min_keywords, max_keywords=max_keywords, ignore=set(ignore)
    )
    if as_json:
        echo_json(report.to_dict(strict))
    else:
        for finding in report.findings:
            click.echo(str(finding))
        data = report.to_dict(strict)
        click.echo(
            f"{report.root}: {report.indexes} indexes, {report.rows} rows, {report.memories} memories "
            f"({report.orphans} in no index) · {data['errors']} errors, {data['warnings']} warnings",
            err=bool(report.findings),
        )
    if report.blocking(strict):
        raise SystemExit(1)


@cli.command()
@click.argument("file", required=False, type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--orphans",
    "orphans_of",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Propose rows for every memory of this folder that no index reaches.",
)
@click.option(
    "--all",
    "all_of",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Propose keywords for every memory of this folder.",
)
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The Serena folder FILE belongs to (default: the nearest with memory-index.md).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the proposals as JSON.")
def keywords(
    file: Path | None, orphans_of: Path | None, all_of: Path | None, root: Path | None, as_json: bool
) -> None:
    """Propose 10-15 activation keywords for a memory file, and the index row to add.

    Keywords are distinctive against the rest of the folder and pass the 40% rule of the
    index they would join. Nothing is written: paste the rows yourself.

    Example:

        memdex keywords .serena/memories/git/git-worktree-cleanup.md
    """
    from memdex.serena.keywords import Proposer, resolve_file
    from memdex.serena.tiers import scan

    if sum(x is not None for x in (file, orphans_of, all_of)) != 1:
        raise click.UsageError("Give one of FILE, --orphans FOLDER or --all FOLDER.")
    base = orphans_of or all_of or root or _serena_root(file)  # type: ignore[arg-type]
    folder = scan(base)
    proposer = Proposer(folder)
    if file is not None:
        targets = [resolve_file(folder, file)]
    elif orphans_of is not None:
        targets = folder.orphans()
    else:
        targets = sorted(folder.memories)
    proposals = [proposer.propose(rel) for rel in targets]
    if as_json:
        echo_json([p.to_dict() for p in proposals])
        return
    for p in proposals:
        where = f"for {p.index}" if p.index else "no index holds memories of its folder yet"
        click.echo(f"{p.file}  ({where}; {p.unique_share:.0%} unique)")
        click.echo(f"  {p.row}")
        if p.current:
            click.echo(f"  now: {' '.join(p.current)}")


@cli.command()
@click.argument("query", required=False)
@click.option(
    "--file",
    "file",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    help="A memory file, instead of a QUERY.",
)
@click.option(
    "--all",
    "all_of",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Medians over every memory of this folder that a domain index reaches.",
)
@click.option(
    "--root",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The Serena folder (default: the nearest with memory-index.md).",
)
@click.option(
    "--skills",
    "k",
    type=click.IntRange(min=1),
    metavar="K",
    help="Price reading K memories of the domain (ADR-017's method: its index + K x its mean memory).",
)
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
@click.pass_context
def cost(
    ctx: click.Context,
    query: str | None,
    file: Path | None,
    all_of: Path | None,
    root: Path | None,
    k: int | None,
    as_json: bool,
) -> None:
    """Tokens a tiered read costs (top index + domain index + memory) against reading the
    consolidated domain, and the break-even point: from how many of the domain's memories on
    the consolidated read is as cheap. QUERY is searched in the index for the memory to read.

    Example:

        memdex cost "worktree cleanup" --skills 3
    """
    from memdex.serena.cost import cost_of, summary
    from memdex.serena.keywords import resolve_file
    from memdex.serena.tiers import scan

    if sum(x is not None for x in (query, file, all_of)) != 1:
        raise click.UsageError("Give one of QUERY, --file FILE or --all FOLDER.")
    if all_of is not None:
        data = summary(scan(all_of), k)
        echo_json(data) if as_json else click.echo(_summary_text(data))
        return
    if query is not None:
        from memdex.query.request import Filters
        from memdex.query.search import search

        hits = search(
            connect(ctx, create=False, readonly=True), query, limit=1, filters=Filters(kinds=["serena"])
        ).hits
        if not hits:
            raise Failure(f"No Serena memory matches {query!r}: index the folder first (memdex index PATH).")
        file = Path(hits[0].path)
    assert file is not None
    folder = scan(root or _serena_root(file))
    result = cost_of(folder, resolve_file(folder, file))
    data = result.to_dict(k)  # a K larger than the domain is an error, before any output
    if as_json:
        echo_json({"query": query, **data})
        return
    click.echo(_cost_text(result, query, k))


def _cost_text(c: object, query: str | None, k: int | None = None) -> str:
    from memdex.serena.cost import Cost

    assert isinstance(c, Cost)
    head = f"{c.file}" + (f" (the best match for {query!r})" if query else "")
    if not c.reachable:
        return f"{head}\n  no index row points at it: a tiered read cannot reach it (memdex search can)"
    lines = [head]
    lines.append(
        f"  tiered read:  memory-index.md {c.top_index_tokens:,} + {c.domain_index or 'no domain index'} "
        f"{c.domain_index_tokens:,} + the memory {c.file_tokens:,} = {c.tiered_tokens:,} tokens "
        f"({c.tiered_cached_tokens:,} with memory-index.md cached)"
    )
    lines.append(f"  consolidated: the domain's {c.domain_files} memories = {c.consolidated_tokens:,} tokens")
    cached, uncached = c.savings(True), c.savings(False)
    if cached is not None and uncached is not None:
        lines.append(f"  saved: {cached:.0%} with memory-index.md cached, {uncached:.0%} without")
    if k is not None:
        skills = c.skills(k)
        lines.append(
            f"  {k} of the domain's memories (index + {k} x {c.mean_memory_tokens:,.0f}): "
            f"{skills['tiered_cached_tokens']:,} tokens cached, {skills['tiered_uncached_tokens']:,} without; "
            f"saved {skills['savings_cached']:.0%} cached, {skills['savings_uncached']:.0%} without"
        )
    even, even_uncached = c.break_even(True), c.break_even(False)
    if even is not None:
        lines.append(
            f"  break-even: from {even} of its {c.domain_files} memories the consolidated read is as cheap "
            f"(from {even_uncached} without memory-index.md cached)"
        )
    return "\n".join(lines)


def _summary_text(d: dict[str, object]) -> str:
    if not d.get("memories"):
        return f"{d['root']}: no memory is reached through a domain index"
    return (
        f"{d['root']}: {d['memories']} memories read through a domain index ({d['unreachable']} in no index)\n"
        f"  median tiered read: {d['median_tiered_cached_tokens']:,} tokens with memory-index.md "
        f"({d['top_index_tokens']:,}) cached, {d['median_tiered_tokens']:,} without\n"
        f"  median consolidated domain: {d['median_consolidated_tokens']:,} tokens\n"
        f"  median saved: {d['median_savings_cached']:.0%} cached, {d['median_savings_uncached']:.0%} uncached; "
        f"the tiered read is cheaper for {d['tiered_cheaper_cached']:.0%} of memories (cached)\n"
        f"  break-even over its {d['domains']} domain indexes: median {d['median_break_even_cached']:g} "
        f"of {d['median_domain_files']:g} memories (cached)" + _skills_summary_text(d.get("skills"))
    )


def _skills_summary_text(s: object) -> str:
    if not isinstance(s, dict):
        return ""
    head = f"\n  {s['k']} memories of a domain ({s['domains']} domains have that many, {s['domains_smaller']} fewer)"
    if not s["domains"]:
        return head
    return (
        f"{head}: median {s['median_tiered_cached_tokens']:,g} tokens cached, saved "
        f"{s['median_savings_cached']:.0%} cached, {s['median_savings_uncached']:.0%} uncached; "
        f"the tiered read is cheaper in {s['tiered_cheaper_cached']:.0%} of them (cached)"
    )
