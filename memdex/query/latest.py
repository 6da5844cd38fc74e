"""Newest first where a question asks what holds now.

"How many musical instruments do I currently own?", "Where do I keep my old sneakers?": a
person's history says different things about the same thing over time, and the last thing
said is what holds (``ParsedQuery.about_now``). Among a chunk search's results about the same
thing, the newest goes first and each older one says so (``why_relevant["newer"]``), so a
reader or a model meets the latest statement first and knows which ones it replaces.

Two results are about the same thing when they are of different documents, both dated, and
share at least ``ranking.LATEST_SHARED`` of the question's words (all of them when it has
fewer) and ``ranking.LATEST_SHARE`` of the older one's (a synonym counts as its word;
"currently", "now"... do not count: they ask when, not what, ``terms.WHEN_WORDS``). A newer
passage that shares less may be about something else, and keeps its place. Which passages
are handed out does not change, only their order: the budget has already chosen them.
"""

from __future__ import annotations

from memdex.models import Hit
from memdex.query import ranking
from memdex.query.terms import WHEN_WORDS

NOTE = "newest first: the question asks what holds now"
_MARK = "; older: "  # where a result's why line says which newer one speaks of the same


def newest_first(hits: list[Hit], words: list[str]) -> list[Hit]:
    """The hits in order, each moved behind the newer hits about the same thing, which are
    marked on it; ``words``: the question's key terms. Marks of an earlier ordering are
    dropped first, so an answer's rounds, fused, are ordered once more as a whole. The scores
    shown keep their places, so a higher score is still an earlier result."""
    for hit in hits:
        _unmark(hit)
    needed = (
        min(ranking.LATEST_SHARED, len({w.casefold() for w in words} - WHEN_WORDS)) or ranking.LATEST_SHARED
    )
    rest = list(hits)
    out: list[Hit] = []
    while rest:
        pick = rest[0]
        while newer := [h for h in rest if _replaces(h, pick, needed)]:  # dates only rise: it ends
            pick = max(newer, key=_day)
        out.append(pick)
        rest.remove(pick)
    for place, hit in enumerate(out):
        later = [h for h in out[:place] if _replaces(h, hit, needed)]
        if later:
            _mark(hit, max(later, key=_day))
    for hit, score in zip(out, [h.score for h in hits], strict=True):
        hit.score = score
    return out


def note(hits: list[Hit]) -> str | None:
    "What a result's notes say of the ordering: how many results are marked older (None: none)."
    older = sum(1 for h in hits if "newer" in h.why_relevant)
    if not older:
        return None
    return f"{NOTE}; {older} older result" + (
        "s say which newer one holds the same words"
        if older > 1
        else " says which newer one holds the same words"
    )


def _terms(hit: Hit) -> set[str]:
    "The question's words a result holds, less those that ask when (``terms.WHEN_WORDS``)."
    why = hit.why_relevant
    held = [m["term"] for m in why.get("terms", [])] + [m["term"] for m in why.get("synonyms", [])]
    return {t.casefold() for t in held} - WHEN_WORDS


def _day(hit: Hit) -> str:
    return hit.own_date or ""


def _later(newer: str, older: str) -> bool:
    "Is ``newer`` after ``older``? To the second when both say a time, else by the day."
    if "T" in newer and "T" in older:
        return newer > older
    return newer[:10] > older[:10]


def _replaces(newer: Hit, older: Hit, needed: int) -> bool:
    "Does ``newer`` speak of what ``older`` does, later?"
    if newer.id == older.id or not newer.own_date or not older.own_date:
        return False
    if not _later(newer.own_date, older.own_date):
        return False
    held = _terms(older)
    shared = held & _terms(newer)
    return len(shared) >= needed and len(shared) >= ranking.LATEST_SHARE * len(held)


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
        f"{why.get('summary', '')}{_MARK}{newer.title} ({(newer.date or '')[:10]}) is newer "
        f"and speaks of {', '.join(shared)} too"
    )


def _unmark(hit: Hit) -> None:
    why = hit.why_relevant
    if why.pop("newer", None) is not None:
        why["summary"] = str(why.get("summary", "")).rsplit(_MARK, 1)[0]
