#!/usr/bin/env python3
"""The tiered-memory tools on the real Serena corpora: lint findings, token costs, and how
many of the keywords people chose `memdex keywords` proposes too.

For every memory a domain index lists today, keywords are proposed as `memdex keywords`
proposes them -- its own index rows left out, so the proposal cannot copy them -- and
compared with the keywords of those rows, by stem: the share of the human keywords found
among the proposals, per file, then its mean and median.

Example:

    python scripts/eval_tiers.py              # both corpora in ../shared/data, JSON on stdout
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path
from typing import Any

import click

from memdex.serena.cost import summary
from memdex.serena.keywords import Proposer
from memdex.serena.lint import lint
from memdex.serena.tiers import scan
from memdex.tokens import fold, stem

DATA = Path(__file__).resolve().parent.parent.parent / "shared" / "data"


def keyword_overlap(root: Path) -> dict[str, Any]:
    folder = scan(root)
    proposer = Proposer(folder)
    shares = []
    started = time.perf_counter()
    for rel in sorted(folder.memories):
        if folder.domain_of(rel) is None:
            continue
        proposal = proposer.propose(rel)
        human = {stem(fold(k)) for k in proposal.current}
        proposed = {stem(fold(k)) for k in proposal.keywords}
        if human:
            shares.append(len(human & proposed) / len(human))
    return {
        "files": len(shares),
        "mean_share_of_human_keywords_proposed": round(statistics.mean(shares), 3),
        "median_share_of_human_keywords_proposed": round(statistics.median(shares), 3),
        "files_with_none_proposed": sum(1 for s in shares if s == 0),
        "seconds": round(time.perf_counter() - started, 2),
    }


@click.command()
@click.option(
    "--data", type=click.Path(exists=True, file_okay=False, path_type=Path), default=DATA, show_default=True
)
def main(data: Path) -> None:
    """Lint, cost and keyword figures for serena-memories and serena-memories-flat (JSON).

    Example:

        python scripts/eval_tiers.py
    """
    out: dict[str, Any] = {}
    for name in ("serena-memories", "serena-memories-flat"):
        root = data / name
        started = time.perf_counter()
        report = lint(root).to_dict()
        lint_seconds = time.perf_counter() - started
        out[name] = {
            "lint": {
                k: report[k]
                for k in ("indexes", "rows", "memories", "orphans", "errors", "warnings", "by_code")
            },
            "lint_seconds": round(lint_seconds, 2),
            "cost": summary(scan(root), 3),  # with reading 3 memories of a domain, as the ADR prices it
            "keywords": keyword_overlap(root),
        }
    click.echo(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
