"""Time in a query: relative dates resolved to days, and the period a query names.

Relative dates -- "today", "yesterday", "this week", "last month", "20 days ago", "past 7
days", "since Monday" -- become a range of days, resolved against the local date (or the
ISO date in ``MEMDEX_NOW``). Month and year words ("October", "May 2026") are read by
``terms``; with these they name the query's period.

Weeks are calendar weeks, Monday to Sunday: "this week" is Monday to today and "last week"
the whole week before it; months and years are calendar months and years too. "past 7
days" (or "last 7 days", "past week") is the rolling window ending today. "since X" runs
from the start of X to today; "since Monday" from the latest Monday, today if it is one.

Loose words widen by a day, or by one of their units: "last weekend" (also "the past
weekend") is the Saturday and Sunday of last week with the Friday before and the Monday after;
"this weekend" this week's (on a Monday, the one just gone). "A couple of days ago" is 1 to 3
days ago, "a few weeks ago" 2 to 4 calendar weeks back, "several months ago" 3 to 5 (a couple:
2, a few: 3, several: 4, each one unit either way). A time said loosely does not filter a
search: what is dated then comes first (``Cascade.loose_first``); alone, it lists its period.

A query whose only key words are dates (and words that only frame a question about time,
FRAMING) lists what is dated in its period: see ``query.listing``.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from memdex.utils import local_today

# Words that say "what happened then" without saying what about: with a date and only
# these (and stopwords), a query lists the period instead of searching for the words.
FRAMING = frozenset(
    """happen happened happens happening going went go on work worked working works done do
    doing did up activity activities event events thing things stuff session sessions chat
    chats conversation conversations note notes memory memories recap summary summarise
    summarize overview timeline history week's day's new changed change changes
    """.split()
)

_WEEKDAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_NUMBERS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "eleven": 11,
    "twelve": 12,
}
_NUM = r"(?P<n>\d{1,5}|" + "|".join(_NUMBERS) + r")"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_POSSESSIVE = r"(?:['’]s)?"
# How many a loose count means ("a couple of days ago"); its span widens by LOOSE_BY units.
_LOOSE = {"couple": 2, "few": 3, "several": 4}
LOOSE_BY = 1
_LOOSE_COUNT = r"(?:a\s+)?(?P<loose>couple|few|several)(?:\s+of)?"
# One relative date, without "since": each alternative names its groups for _resolve.
_ONE = (
    rf"(?:(?:the\s+)?(?P<rolling>past|last)\s+{_NUM}\s+{_UNIT})"
    rf"|(?:{_NUM.replace('<n>', '<ago_n>')}\s+{_UNIT.replace('<unit>', '<ago_unit>')}\s+ago)"
    rf"|(?:{_LOOSE_COUNT}\s+{_UNIT.replace('<unit>', '<loose_unit>')}\s+ago)"
    r"|(?:(?:the\s+)?(?P<weekend>this|last|past|previous)\s+weekend)"
    r"|(?:(?P<which>this|last|past|previous)\s+(?P<cal>week|month|year))"
    rf"|(?:(?P<last_day>last)\s+(?P<weekday>{'|'.join(_WEEKDAYS)}))"
    r"|(?P<day>today|yesterday|(?:the\s+)?day\s+before\s+yesterday)"
)
_SINCE_DAY = rf"since\s+(?P<since_day>{'|'.join(_WEEKDAYS)})"
_RELATIVE = re.compile(
    rf"(?<![\w-])(?:(?P<since>since\s+)?(?:{_ONE})|{_SINCE_DAY}){_POSSESSIVE}(?![\w-])",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Span:
    "A relative date as typed, and the days it covers (both inclusive)."

    words: str
    since: date
    until: date
    loose: bool = False  # said loosely ("last weekend", "a couple of days ago"): widened


def relative_spans(text: str, today: Callable[[], date] = local_today) -> tuple[list[Span], str]:
    """The relative dates in ``text``, and the text without them. ``today`` is asked only
    when there is one, so a bad MEMDEX_NOW troubles only queries that need it."""
    spans: list[Span] = []
    kept: list[str] = []
    cursor = 0
    now: date | None = None
    for match in _RELATIVE.finditer(text):
        if now is None:
            now = today()
        try:
            since, until = _resolve(match, now)
        except (OverflowError, ValueError):  # "99999 years ago": no such day, so plain words
            continue
        # "since last weekend" is a start, not a loose time
        loose = bool(match.group("loose") or match.group("weekend")) and not match.group("since")
        spans.append(Span(" ".join(match.group(0).split()), since, until, loose))
        kept.append(text[cursor : match.start()])
        cursor = match.end()
    if not spans:
        return [], text
    kept.append(text[cursor:])
    return spans, " ".join(kept)


def _resolve(m: re.Match[str], today: date) -> tuple[date, date]:
    g = m.groupdict()
    if g["since_day"]:
        return _last_weekday(today, g["since_day"], include_today=True), today
    if g["rolling"]:
        since = _back(today, _count(g["n"]), g["unit"].lower()) + timedelta(days=1)
        first, last = since, today
    elif g["ago_n"]:
        unit = g["ago_unit"].lower()
        first, last = _calendar(_back(today, _count(g["ago_n"]), unit), unit)
    elif g["loose"]:
        unit, n = g["loose_unit"].lower(), _LOOSE[g["loose"].lower()]
        first = _calendar(_back(today, n + LOOSE_BY, unit), unit)[0]
        last = _calendar(_back(today, n - LOOSE_BY, unit), unit)[1]
    elif g["weekend"]:
        # "this weekend" said on a Monday is the one just gone
        this = g["weekend"].lower() == "this" and today.weekday() > 0
        week = today if this else today - timedelta(weeks=1)
        saturday = _calendar(week, "week")[0] + timedelta(days=5)
        first, last = saturday - timedelta(days=1), saturday + timedelta(days=2)
    elif g["cal"]:
        unit, which = g["cal"].lower(), g["which"].lower()
        if which == "past":  # the rolling window: "past week" is the last 7 days
            first, last = _back(today, 1, unit) + timedelta(days=1), today
        elif which == "this":
            first, last = _calendar(today, unit)[0], today
        else:
            first, last = _calendar(_back(today, 1, unit), unit)
    elif g["weekday"]:
        day = _last_weekday(today, g["weekday"], include_today=False)
        first, last = day, day
    else:
        word = g["day"].lower()
        back = 0 if word == "today" else 1 if word == "yesterday" else 2
        first = last = today - timedelta(days=back)
    if g["since"]:
        return first, today
    return first, last


def _count(word: str) -> int:
    return _NUMBERS.get(word.lower()) or int(word)


def _back(day: date, n: int, unit: str) -> date:
    "The day ``n`` days, weeks, months or years before ``day`` (a month's end kept in range)."
    if unit == "day":
        return day - timedelta(days=n)
    if unit == "week":
        return day - timedelta(weeks=n)
    months = n * (12 if unit == "year" else 1)
    index = day.year * 12 + day.month - 1 - months
    year, month = divmod(index, 12)
    month += 1
    return date(year, month, min(day.day, calendar.monthrange(year, month)[1]))


def _calendar(day: date, unit: str) -> tuple[date, date]:
    "The calendar day, week (Monday to Sunday), month or year that holds ``day``."
    if unit == "day":
        return day, day
    if unit == "week":
        monday = day - timedelta(days=day.weekday())
        return monday, monday + timedelta(days=6)
    if unit == "month":
        return day.replace(day=1), day.replace(day=calendar.monthrange(day.year, day.month)[1])
    return date(day.year, 1, 1), date(day.year, 12, 31)


def _last_weekday(today: date, name: str, include_today: bool) -> date:
    back = (today.weekday() - _WEEKDAYS.index(name.lower())) % 7
    if back == 0 and not include_today:
        back = 7
    return today - timedelta(days=back)


def window(spans: list[Span]) -> tuple[str | None, str | None]:
    "The days all spans share, as ISO dates (since, until); None, None without spans."
    if not spans:
        return None, None
    since = max(s.since for s in spans)
    until = min(s.until for s in spans)
    return since.isoformat(), until.isoformat()


def narrow(params: dict[str, Any], since: str | None, until: str | None) -> dict[str, Any]:
    """Filter parameters (``document_filter.sql``) narrowed to a window of days as well: the
    later of two starts, the earlier of two ends (``--until 2025-10`` ends with October)."""
    out = dict(params)
    if since is not None:
        given = out.get("since")
        out["since"] = since if given is None or str(given) < since else given
    if until is not None:
        given = out.get("until")
        # a shorter --until covers its whole month or year: compare as if padded past its end
        out["until"] = until if given is None or f"{given}~" > f"{until}~" else given
    return out


def describe(words: list[str], since: str | None, until: str | None) -> str:
    "The period in words, with its days when they were worked out: 'last week (… to …)'."
    label = " ".join(words)
    if since is None:
        return label
    return f"{label} ({days(since, until)})"


def days(since: str, until: str | None) -> str:
    "A period's days as results say them: one day, or 'since to until'."
    return since if since == until else f"{since} to {until}"
