"""``memdex cost``: tokens a tiered read costs against reading the consolidated domain.

A tiered read of one memory loads the top index (``memory-index.md``, which a session may
keep cached), the domain index that points at the memory, and the memory itself. The
alternative it replaced loads the whole domain: every memory that domain index lists, as one
consolidated file. The design that introduced the tiers measured 82% saved for one memory
with the top index cached (27.6% without); this measures the same on a real folder. Tokens
are estimated as bytes / 4, as everywhere in memdex.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass
from typing import Any

from memdex.serena.tiers import TOP_INDEX, Folder


@dataclass
class Cost:
    file: str
    file_tokens: int
    reachable: bool  # some index row points at it
    top_index_tokens: int = 0
    domain_index: str | None = None
    domain_index_tokens: int = 0
    domain_files: int = 0
    consolidated_tokens: int = 0  # the domain's memories read together

    @property
    def tiered_tokens(self) -> int:
        return self.top_index_tokens + self.domain_index_tokens + self.file_tokens

    @property
    def tiered_cached_tokens(self) -> int:
        "With the top index already in the session's context."
        return self.domain_index_tokens + self.file_tokens

    def savings(self, cached: bool) -> float | None:
        if not self.reachable or not self.consolidated_tokens:
            return None
        tiered = self.tiered_cached_tokens if cached else self.tiered_tokens
        return 1 - tiered / self.consolidated_tokens

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["tiered_tokens"] = self.tiered_tokens
        out["tiered_cached_tokens"] = self.tiered_cached_tokens
        for cached, key in ((True, "savings_cached"), (False, "savings_uncached")):
            value = self.savings(cached)
            out[key] = None if value is None else round(value, 3)
        return out


def cost_of(folder: Folder, rel: str) -> Cost:
    "The cost of reading one memory through the tiers, and of its consolidated domain."
    cost = Cost(rel, folder.tokens(rel), reachable=bool(folder.links_to(rel)))
    if not cost.reachable:
        return cost
    cost.top_index_tokens = folder.tokens(TOP_INDEX) if TOP_INDEX in folder.indexes else 0
    domain = folder.domain_of(rel)
    if domain is not None:
        cost.domain_index, cost.domain_index_tokens = domain.rel, folder.tokens(domain.rel)
        members = {link.target for link in domain.links if link.target in folder.memories}
    else:  # routed straight from the top index: its row's memories are the domain
        line = next(link.line for link in folder.links_to(rel))
        top = folder.indexes[TOP_INDEX]
        members = {link.target for link in top.links if link.line == line and link.target in folder.memories}
    cost.domain_files = len(members)
    cost.consolidated_tokens = sum(folder.tokens(m) for m in members if m)
    return cost


def summary(folder: Folder) -> dict[str, Any]:
    "Medians over every memory a domain index reaches: the design's single-memory read."
    costs = [c for c in (cost_of(folder, rel) for rel in sorted(folder.memories)) if c.domain_index]
    if not costs:
        return {"root": str(folder.root), "memories": 0}

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 3)

    cached = [c.savings(True) or 0.0 for c in costs]
    return {
        "root": str(folder.root),
        "memories": len(costs),
        "unreachable": sum(1 for rel in folder.memories if not folder.links_to(rel)),
        "top_index_tokens": costs[0].top_index_tokens,
        "median_memory_tokens": median([c.file_tokens for c in costs]),
        "median_domain_index_tokens": median([c.domain_index_tokens for c in costs]),
        "median_consolidated_tokens": median([c.consolidated_tokens for c in costs]),
        "median_tiered_cached_tokens": median([c.tiered_cached_tokens for c in costs]),
        "median_tiered_tokens": median([c.tiered_tokens for c in costs]),
        "median_savings_cached": median(cached),
        "median_savings_uncached": median([c.savings(False) or 0.0 for c in costs]),
        "tiered_cheaper_cached": round(sum(1 for s in cached if s > 0) / len(costs), 3),
    }
