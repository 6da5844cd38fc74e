"""An answer's details grouped by category, and the analysis that connects them.

With a model, Claude names each detail's category and writes the analysis (``prompts``).
Without one, memdex groups the details by what their sources are filed under -- namespace,
else type, else platform, else kind: the first of these that tells the cited sources apart
-- and says so; its analysis reports what connects the findings without reading them: the
themes their sources share (``query/themes.py``), the sources several claims rest on, and
the span of their dates. A timeline keeps its date order: one group, no categories.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Sequence

from memdex.answer.answers import Detail
from memdex.answer.sources import Source
from memdex.query.themes import themes

GROUP_FIELDS = ("namespace", "type", "platform", "kind")
NOT_READ = "Written by memdex without a model: links between the sources, not a reading of them."
UNFILED = "other"  # the category of a detail whose source has no value for the field


def grouped(details: Sequence[Detail]) -> list[Detail]:
    "The details with each category's together, categories in the order they first appear."
    first: dict[str, int] = {}
    for i, d in enumerate(details):
        first.setdefault(d.category or "", i)
    return sorted(details, key=lambda d: first[d.category or ""])


def group_field(sources: Sequence[Source]) -> str:
    """The field the details of an answer without a model are grouped by: the first of
    GROUP_FIELDS every source has that takes more than one value, else the first every source
    has, else ``kind``."""
    have = [f for f in GROUP_FIELDS if sources and all(getattr(s.hit, f) for s in sources)]
    varied = [f for f in have if len({getattr(s.hit, f) for s in sources}) > 1]
    return (varied or have or ["kind"])[0]


def by_source(details: Sequence[Detail], sources: Sequence[Source]) -> str:
    """Give each detail the category of its first cited source (``namespace: projects``...);
    return the field used."""
    cited = [s for s in sources if any(s.n in d.citations for d in details)]
    name = group_field(cited or sources)
    value = {s.n: getattr(s.hit, name) for s in sources}
    for d in details:
        first = d.citations[0] if d.citations else None
        d.category = f"{name}: {value.get(first) or UNFILED}" if first is not None else UNFILED
    return name


def connections(conn: sqlite3.Connection, details: Sequence[Detail], sources: Sequence[Source]) -> str:
    """What connects the findings, from the cited sources alone: the themes most of them
    share, the sources several claims rest on, and the span of their dates."""
    cited = [s for s in sources if any(s.n in d.citations for d in details)]
    if not cited:
        return ""
    parts = []
    shared = [t for t in themes(conn, [s.hit.id for s in cited], limit=4) if t.count > 1]
    if shared:
        terms = ", ".join(f"{t.term} ({t.kind}, {t.count})" for t in shared)
        parts.append(f"{len(cited)} cited sources; what several share: {terms}")
    uses = Counter(c for d in details for c in d.citations)
    leaned = sorted(n for n, k in uses.items() if k > 1)
    if leaned:
        parts.append(f"more than one claim rests on [{', '.join(map(str, leaned))}]")
    days = sorted(s.hit.own_date[:10] for s in cited if s.hit.own_date)
    if len(set(days)) > 1:
        parts.append(f"the cited sources are dated {days[0]} to {days[-1]}")
    if not parts:
        return ""
    text = "; ".join(parts)
    return f"{text[0].upper()}{text[1:]}. ({NOT_READ})"
