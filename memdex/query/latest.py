"""Newest first where a question asks what holds now.

"How many musical instruments do I currently own?", "Where do I keep my old sneakers?": a
person's history says different things about the same thing over time, and the last thing
said is what holds (``ParsedQuery.about_now``). Among a chunk search's results about the same
thing, the newest goes first and each older one says so (``why_relevant["newer"]``), so a
reader or a model meets the latest statement first and knows which ones it replaces.

Two results are about the same thing when they are of different documents, both dated, and
share at least ``ranking.LATEST_SHARED`` of the question's words and ``ranking.LATEST_SHARE``
of the older one's (a synonym counts as its word; "currently", "now"... do not count: they ask
when, not what). A newer passage that shares less may be about something else, and keeps its
place. Which passages are handed out does not change, only their order: the budget has
already chosen them.
"""

from __future__ import annotations

from memdex.models import Hit
from memdex.query import ranking
from memdex.query.terms import NOW_WORDS


def newest_first(hits: list[Hit]) -> list[Hit]:
    """The hits in order, each moved behind the newer hits about the same thing, which are
    marked on it. The scores shown keep their places, so higher is still earlier."""
    rest = list(hits)
    out: list[Hit] = []
    while rest:
        head = rest[0]
        newer = [h for h in rest if _replaces(h, head)]
        pick = max(newer, key=_date) if newer else head
        out.append(pick)
        rest.remove(pick)
    for place, hit in enumerate(out):
        later = [h for h in out[:place] if _replaces(h, hit)]
        if later:
            _mark(hit, max(later, key=_date))
    for hit, score in zip(out, [h.score for h in hits], strict=True):
        hit.score = score
    return out


def _terms(hit: Hit) -> set[str]:
    "The question's words a result holds, less those that ask when (``terms.NOW_WORDS``)."
    why = hit.why_relevant or {}
    held = [m["term"] for m in why.get("terms", [])] + [m["term"] for m in why.get("synonyms", [])]
    return {t.casefold() for t in held if not NOW_WORDS.fullmatch(t)}


def _date(hit: Hit) -> str:
    return hit.own_date or ""


def _replaces(newer: Hit, older: Hit) -> bool:
    "Does ``newer`` speak of what ``older`` does, later?"
    if newer.id == older.id or not newer.own_date or not older.own_date or _date(newer) <= _date(older):
        return False
    held = _terms(older)
    shared = held & _terms(newer)
    return len(shared) >= ranking.LATEST_SHARED and len(shared) >= ranking.LATEST_SHARE * len(held)


def _mark(hit: Hit, newer: Hit) -> None:
    why = hit.why_relevant
    shared = sorted(_terms(hit) & _terms(newer))
    why["newer"] = {
        "id": newer.id,
        "key": newer.key,
        "title": newer.title,
        "date": newer.date,
        "terms": shared,
    }
    why["summary"] = (
        f"{why.get('summary', '')}; older: {newer.title} ({(newer.date or '')[:10]}) is newer "
        f"and speaks of {', '.join(shared)} too"
    )
