"""``memdex cost``: tokens a tiered read costs against reading the consolidated domain.

A tiered read of one memory loads the top index (``memory-index.md``, which a session may
keep cached), the domain index that points at the memory, and the memory itself. The
alternative it replaced loads the whole domain: every memory that domain index lists, as one
consolidated file. The design that introduced the tiers measured 82% saved for one memory
with the top index cached (27.6% without); this measures the same on a real folder. Tokens
are estimated as bytes / 4, as everywhere in memdex.

Reading k memories of one domain is priced by the ADR's own method (its analysis of the
Copilot pilot): the domain index once, plus k times the domain's mean memory, against the
consolidated domain. The break-even point is the fewest memories for which the tiered read
costs at least as much: ``(consolidated - domain index) / mean memory``, rounded up -- the
ADR's (1,325 - 98) / 145 = 8.46, "tiered loses ... when needing 9+ skills". Its 3 skills
cost 98 + 3 x 145 = 533 tokens, 62% under its 1,415-token consolidated baseline.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import asdict, dataclass
from typing import Any

from memdex.errors import InvalidParameter
from memdex.serena.tiers import TOP_INDEX, Folder


def skills_tokens(index_tokens: float, mean_memory_tokens: float, k: int) -> float:
    "Tokens of reading k memories of a domain through its index (ADR-017's analysis)."
    return index_tokens + k * mean_memory_tokens


def break_even(consolidated_tokens: float, index_tokens: float, mean_memory_tokens: float) -> int:
    "The fewest memories whose tiered read costs at least the consolidated domain (at least 1)."
    if mean_memory_tokens <= 0:
        return 1
    return max(1, math.ceil((consolidated_tokens - index_tokens) / mean_memory_tokens - 1e-9))


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

    @property
    def mean_memory_tokens(self) -> float:
        return self.consolidated_tokens / self.domain_files if self.domain_files else 0.0

    def _overhead(self, cached: bool) -> int:
        "What a tiered read pays besides the memories: the domain index, and the top one uncached."
        return self.domain_index_tokens + (0 if cached else self.top_index_tokens)

    def skills_tokens(self, k: int, cached: bool) -> int:
        "Tokens of reading k memories of this domain through the tiers."
        return round(skills_tokens(self._overhead(cached), self.mean_memory_tokens, k))

    def skills_savings(self, k: int, cached: bool) -> float | None:
        if not self.reachable or not self.consolidated_tokens:
            return None
        return 1 - self.skills_tokens(k, cached) / self.consolidated_tokens

    def break_even(self, cached: bool) -> int | None:
        "From how many of the domain's memories on the consolidated read is as cheap."
        if not self.reachable or not self.consolidated_tokens:
            return None
        return break_even(self.consolidated_tokens, self._overhead(cached), self.mean_memory_tokens)

    def skills(self, k: int) -> dict[str, Any]:
        "Reading k memories of the domain, with the top index cached and without."
        if k > self.domain_files:
            where = self.domain_index or "its memory-index.md row"
            raise InvalidParameter(
                f"--skills {k}: {where} lists {self.domain_files} memories; give 1 to {self.domain_files}."
            )
        out: dict[str, Any] = {"k": k}
        for cached, suffix in ((True, "cached"), (False, "uncached")):
            savings = self.skills_savings(k, cached)
            out[f"tiered_{suffix}_tokens"] = self.skills_tokens(k, cached)
            out[f"savings_{suffix}"] = None if savings is None else round(savings, 3)
        return out

    def to_dict(self, k: int | None = None) -> dict[str, Any]:
        out = asdict(self)
        out["tiered_tokens"] = self.tiered_tokens
        out["tiered_cached_tokens"] = self.tiered_cached_tokens
        for cached, key in ((True, "savings_cached"), (False, "savings_uncached")):
            value = self.savings(cached)
            out[key] = None if value is None else round(value, 3)
        out["mean_memory_tokens"] = round(self.mean_memory_tokens, 1)
        out["break_even_cached"] = self.break_even(True)
        out["break_even_uncached"] = self.break_even(False)
        if k is not None and self.reachable:
            out["skills"] = self.skills(k)
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


def domains(folder: Folder) -> list[Cost]:
    "One cost per domain index that lists memories, priced through its first memory."
    out = []
    for index in sorted(folder.indexes.values(), key=lambda i: i.rel):
        members = sorted({link.target for link in index.links if link.target in folder.memories})
        if not index.is_top and members:
            cost = cost_of(folder, members[0])
            cost.domain_index, cost.domain_index_tokens = index.rel, folder.tokens(index.rel)
            cost.domain_files = len(members)
            cost.consolidated_tokens = sum(folder.tokens(m) for m in members)
            out.append(cost)
    return out


def summary(folder: Folder, k: int | None = None) -> dict[str, Any]:
    """Medians over every memory a domain index reaches: the design's single-memory read; the
    break-even point over the domain indexes; with ``k``, reading k memories of each domain
    that has k or more."""
    costs = [c for c in (cost_of(folder, rel) for rel in sorted(folder.memories)) if c.domain_index]
    if not costs:
        return {"root": str(folder.root), "memories": 0}

    def median(values: list[float]) -> float:
        return round(statistics.median(values), 3)

    cached = [c.savings(True) or 0.0 for c in costs]
    per_domain = domains(folder)
    out = {
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
        "domains": len(per_domain),
        "median_domain_files": median([c.domain_files for c in per_domain]),
        "median_break_even_cached": median([c.break_even(True) or 0 for c in per_domain]),
        "median_break_even_share_cached": median(
            [(c.break_even(True) or 0) / c.domain_files for c in per_domain]
        ),
    }
    if k is not None:
        out["skills"] = _skills_summary(per_domain, k, median)
    return out


def _skills_summary(per_domain: list[Cost], k: int, median: Any) -> dict[str, Any]:
    "Reading k memories of every domain that has k or more."
    if k < 1:
        raise InvalidParameter(f"--skills {k}: give 1 or more memories to read.")
    big = [c for c in per_domain if c.domain_files >= k]
    out: dict[str, Any] = {"k": k, "domains": len(big), "domains_smaller": len(per_domain) - len(big)}
    if big:
        out["median_tiered_cached_tokens"] = median([c.skills_tokens(k, True) for c in big])
        out["median_savings_cached"] = median([c.skills_savings(k, True) or 0.0 for c in big])
        out["median_savings_uncached"] = median([c.skills_savings(k, False) or 0.0 for c in big])
        out["tiered_cheaper_cached"] = round(
            sum(1 for c in big if (c.break_even(True) or 0) > k) / len(big), 3
        )
    return out
