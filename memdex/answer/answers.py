"""What an answer is: its details, each citing the sources that support it, and the whole with
its sources, caveats and where to verify it, as every door writes it (``Answer.to_dict``).
``answer.synthesis`` makes one; ``answer.categories`` groups its details."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memdex.answer.sources import Source

if TYPE_CHECKING:
    from memdex.answer.refine import Refinement


@dataclass
class Detail:
    text: str
    citations: list[int]
    confidence: float  # 0-1: how well the cited sources support the claim
    category: str | None = None  # the group it is shown in (None: a timeline's, in date order)

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "citations": self.citations,
            "confidence": round(self.confidence, 2),
            "category": self.category,
        }


@dataclass
class Answer:
    question: str
    summary: str
    details: list[Detail]
    caveats: list[str]
    sources: list[Source]  # every source sent; ``cited`` marks those the answer uses
    method: str  # claude | extractive
    refinement: Refinement | None
    model: str | None = None
    reason: str | None = None  # why the answer is extractive (or why there is none)
    timeline: bool = False
    period: str | None = None  # a question about a period: "October", "last week (…)"
    usage: dict[str, int] = field(default_factory=dict)
    full_text: bool = False  # include each passage's text in to_dict()
    analysis: str = ""  # how the findings connect
    # who grouped the details: "the model", or the sources' field (namespace, type, platform,
    # kind) an answer without a model used; None for a timeline, in date order
    grouped_by: str | None = None

    @property
    def verify(self) -> dict[str, Any]:
        """Where to check the answer: the primary path -- the best-ranked source the most
        claims rest on -- and the related paths of every other cited passage."""
        cited = [s for s in self.sources if s.cited]
        if not cited:
            return {"primary": None, "related": []}
        top = max(cited, key=lambda s: (len(s.supports), -s.n))
        related = [loc for s in cited for loc in s.locations if loc != top.locations[0]]
        return {"primary": top.locations[0], "related": list(dict.fromkeys(related))}

    @property
    def paths_to_verify(self) -> list[str]:
        "The primary path, then the related ones."
        verify = self.verify
        return [verify["primary"], *verify["related"]] if verify["primary"] else []

    def to_dict(self) -> dict[str, Any]:
        "The spec's ``AnswerWithSources`` fields first, then memdex's own, then old aliases."
        tokens = sum(s.tokens for s in self.sources)
        return {
            "question": self.question,
            "summary": self.summary,
            "details": [{"n": i, **d.to_dict()} for i, d in enumerate(self.details, 1)],
            "categories": categories(self.details),
            "analysis": self.analysis,
            "grouped_by": self.grouped_by,
            "caveats": " ".join(self.caveats) or None,
            "sources": [s.to_dict(full_text=self.full_text) for s in self.sources],
            "verification_paths": self.paths_to_verify,
            "verify": self.verify,
            "total_source_tokens": tokens,
            "caveat_list": self.caveats,
            "method": self.method,
            "model": self.model,
            "reason": self.reason,
            "timeline": self.timeline,
            "period": self.period,
            "usage": self.usage,
        }


def categories(details: Sequence[Detail]) -> list[dict[str, Any]]:
    "Each category with the numbers (1-based) of its details: ``[{'name', 'details'}]``."
    out: dict[str, list[int]] = {}
    for i, d in enumerate(details, 1):
        out.setdefault(d.category or "", []).append(i)
    return [{"name": name or None, "details": numbers} for name, numbers in out.items()]
