"""User query text -> search terms, safe to hand to FTS5.

Every term becomes a quoted FTS5 phrase built only from word characters, so no input (quotes,
``AND``, ``NEAR(``, ``*``, ``-x``, ``col:``, ``^``, NUL, emoji, 10 KB strings) can be an FTS5
syntax error. Raw FTS5 syntax is a separate, opt-in path (``--raw``).

A term is what the user typed between spaces: ``hook-suppression`` is one term, the phrase
"hook suppression", because ``memdex.tokens`` splits it so in the index too.
Stopwords ("what did we ... about") are kept out of the key terms, so questions need no
rewording. Month and year words ("October", "2025") and relative dates ("yesterday", "last
week", see ``period``) become date filters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from memdex import tokens as words_of
from memdex.query import period
from memdex.tokens import STOPWORDS, WORD

POSSESSIVES = True
# A question about whoever asks it has one of these words (ParsedQuery.about_asker; English
# only), unless it asks what the other side of a conversation said ("did you say", "you
# mentioned", "your advice", "our last conversation") or how to do something ("how do I
# configure ruff?": the answer is the other side's). "I/O" is no person.
FIRST_PERSON = frozenset({"i", "me", "my", "mine", "myself"})
_NOT_ABOUT_ASKER = re.compile(
    r"\bdid you\b|\byou(?:'d)? (?:said|mentioned|told|suggested|recommended|provided|gave|"
    r"shared|listed|explained|wrote|described|noted)\b|\byour (?:suggestion|recommendation|advice|"
    r"answer|reply|tips?)\b|\bour (?:previous|last|earlier) (?:conversation|chat|discussion)\b|"
    r"\bhow (?:do|can|could|should|would) i\b|\bi\s*/\s*o\b",
    re.IGNORECASE,
)
# A question asks what holds now (ParsedQuery.about_now; English only) when it says so
# ("currently", "now", "latest", "still", "these days"), or when it is about the asker, names
# no time of its own and does not ask about the past ("previously", "before I bought", "used
# to", "at first", "originally", "earliest", "ago"): what a person said last about a thing is
# what holds for them ("Where did I get my guitar serviced?" asks about the latest service).
# A question that names a time ("10 days ago", "in May") never does: every statement of that
# time counts alike.
NOW_WORDS = re.compile(
    r"\b(?:currently|current|now|nowadays|latest|still|anymore|these days|at the moment|"
    r"most recent(?:ly)?)\b",
    re.IGNORECASE,
)
PAST_WORDS = re.compile(
    r"\b(?:previous(?:ly)?|formerly|originally|initially|earlier|earliest|oldest|ago|used to|"
    r"at first|the first time|in the past|back then|before(?: i| we|(?=\s*(?:[?.!,;]|$)))|"
    r"prior to)\b",
    re.IGNORECASE,
)
# The words of those phrases, which say when, not what: not counted as what two results share
# (query/latest.py).
WHEN_WORDS = frozenset(
    {"currently", "current", "now", "nowadays", "latest", "still", "anymore", "recent", "recently"}
)
MAX_TERMS = 32  # a pasted paragraph is still a query, of its 32 most useful words
_YEAR = re.compile(r"^(19|20)\d\d$")

MONTHS = {
    "january": 1,
    "february": 2,
    "march": 3,
    "april": 4,
    "may": 5,
    "june": 6,
    "july": 7,
    "august": 8,
    "september": 9,
    "october": 10,
    "november": 11,
    "december": 12,
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "sept": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
# Words that are months only when capitalised: "may" and "march" are verbs, the short forms
# are often other words.
_MONTH_NEEDS_CAPITAL = {
    "may",
    "march",
    "jan",
    "feb",
    "mar",
    "apr",
    "jun",
    "jul",
    "aug",
    "sep",
    "sept",
    "oct",
    "nov",
    "dec",
}

# A month word is a date when it reads as one: after one of these ("in June", "since May",
# "between March and June"), beside a year or a day ("June 2025", "3 June", "June 3rd"), or
# when nothing but framing words is left ("June", "what happened in June?"). Elsewhere it is
# a name, searched as a word: "When did June get her first shot?" is about someone called
# June, and a month filter would hide every document about her that is not dated June.
MONTH_LEADS = frozenset(
    """in during since until till before after from by of early late mid last this next
    through to between and or around on""".split()
)
_DAY = re.compile(r"^(0?[1-9]|[12]\d|3[01])(st|nd|rd|th)?$")
# A possessive ending: "Jon's", "Jon’s", "pets'" are Jon and pets. FTS5 splits "Jon's" into
# "jon" and "s", so the phrase "jon s" would find only the possessive itself, never "Jon" (as
# Lucene's EnglishPossessiveFilter, the ending is dropped; "what's" is "what", a stopword).
_POSSESSIVE = re.compile(r"(?<=\w)['’]s?(?=[^\w]*$)", re.IGNORECASE)


@dataclass
class Term:
    "One search term: what was typed, and its words (``phrase`` makes them the index's tokens)."

    text: str
    tokens: list[str]
    stop: bool = False
    synonyms: list[Term] = field(default_factory=list)
    possessive: bool = False  # typed as "Jon's": matches "Jon", and "Jon's" counts more

    @property
    def phrase(self) -> str:
        """A quoted FTS5 phrase of the term's tokens (``memdex.tokens.phrase``), so always valid
        syntax. A possessive is the word or the possessive itself: BM25 counts a text holding
        "Jon's" for both, so the form typed still ranks first ("Claude Code's" among texts
        about code)."""
        quoted = words_of.phrase(self.tokens)
        if self.possessive:
            return "(" + quoted + " OR " + words_of.phrase([*self.tokens, "s"]) + ")"
        return quoted


@dataclass
class ParsedQuery:
    terms: list[Term]
    months: list[int] = field(default_factory=list)
    years: list[str] = field(default_factory=list)
    date_words: list[str] = field(default_factory=list)
    spans: list[period.Span] = field(default_factory=list)  # relative dates: "last week"
    month_names: list[str] = field(default_factory=list)  # month words read as names (MONTH_LEADS)
    # Does it ask about whoever asks it ("How many instruments do I own?")? Then what they said
    # is the evidence (ranking.PERSON_WEIGHT); not when it asks what the other side said
    # ("how many eggs did you say we need?"): see ``asks_about_asker``.
    about_asker: bool = False
    # Does it ask what holds now ("How many instruments do I currently own?")? Then among
    # results about the same thing the newest goes first (query.latest): see ``asks_about_now``.
    about_now: bool = False

    @property
    def key_terms(self) -> list[Term]:
        "The terms that carry meaning: all of them, less stopwords (unless nothing else is left)."
        key = [t for t in self.terms if not t.stop]
        return key or self.terms

    @property
    def dated(self) -> bool:
        "Does the query name a time: a month, a year or a relative date?"
        return bool(self.months or self.years or self.spans)

    @property
    def date_only(self) -> bool:
        """Are dates all it asks about? Its other words are stopwords or only frame a question
        about time ("what happened in October?"); then it lists the period."""
        return self.dated and all(_framing(t) for t in self.terms)

    def window(self) -> tuple[str | None, str | None]:
        "The days the relative dates leave, as ISO dates: (since, until), None when unbounded."
        return period.window(self.spans)

    @property
    def filtering(self) -> bool:
        "Do its dates filter the results: a month, a year or a time said exactly?"
        return bool(self.months or self.years or any(not s.loose for s in self.spans))

    @property
    def loose(self) -> bool:
        """Is a time it names said loosely ("last weekend")? Then it ranks what it holds first
        and filters nothing (``Cascade.loose_first``)."""
        return any(s.loose for s in self.spans)

    def strict_window(self) -> tuple[str | None, str | None]:
        """The days the relative dates said exactly leave (not "last weekend"): what a search filters by."""
        return period.window([s for s in self.spans if not s.loose])

    def date_filters(self) -> dict[str, Any]:
        "The dates read from the query, as a result's ``filters`` show them."
        out: dict[str, Any] = {}
        if self.years:
            out["years"] = self.years
        if self.months:
            out["months"] = self.months
        if self.spans:
            since, until = self.window()
            loose = [s for s in self.spans if s.loose]
            if loose and not self.date_only:  # with words: they rank first, and filter nothing
                strict = [s for s in self.spans if not s.loose]
                since, until = self.strict_window()
                out["dates"] = {"words": [s.words for s in strict], "since": since, "until": until}
                first, last = period.window(loose)
                out["dates"]["loose"] = {"words": [s.words for s in loose], "since": first, "until": last}
            else:
                out["dates"] = {"words": [s.words for s in self.spans], "since": since, "until": until}
        return out


def tokens(text: str) -> list[str]:
    """The words of a query as typed, split where the index splits words: a term keeps them
    to show and to replace; its phrase folds and stems them as the index does
    (``memdex.tokens``)."""
    return WORD.findall(text)


def parse_query(text: str, *, date_words: bool = True) -> ParsedQuery:
    "Split a query into terms, pulling month and year words out as date filters."
    original = text
    parsed = ParsedQuery(terms=[], about_asker=asks_about_asker(text))
    if date_words:
        parsed.spans, text = period.relative_spans(text)
        parsed.date_words += [s.words for s in parsed.spans]
    seen: set[str] = set()
    pieces = text.replace("\x00", " ").split()
    owners = set()  # places of possessives: "June's vet" is about someone called June, never a date
    if POSSESSIVES:
        for i, piece in enumerate(pieces):
            pieces[i] = _POSSESSIVE.sub("", piece)
            if pieces[i] != piece:
                owners.add(i)
    dates: list[int] = []  # places of the pieces read as years or months
    names: dict[int, Term] = {}  # month words that do not read as dates where they stand
    for i, piece in enumerate(pieces):
        toks = tokens(piece)
        if not toks:
            continue
        date_word = date_words and len(toks) == 1 and i not in owners and _is_date_word(_bare(piece))
        if date_word and (_YEAR.match(toks[0]) or _reads_as_date(pieces, i)):
            dates.append(i)
            continue
        key = " ".join(toks).lower()
        if key in seen:
            continue
        seen.add(key)
        if date_word:
            names[i] = Term(text=_display(piece), tokens=toks)
        single = toks[0].lower()
        stop = len(toks) == 1 and (single in STOPWORDS or (len(single) == 1 and not single.isdigit()))
        term = Term(text=_display(piece), tokens=toks, stop=stop, possessive=i in owners)
        parsed.terms.append(names.get(i) or term)
        if len(parsed.terms) >= MAX_TERMS:
            break
    if names:
        others = [t for t in parsed.terms if t not in names.values()]
        if all(_framing(t) for t in others):
            dates += names  # nothing else to search for: the month is the question
            parsed.terms = others
        else:
            parsed.month_names = list(dict.fromkeys(_bare(pieces[i]) for i in names))
    for i in sorted(dates):
        word = _bare(pieces[i])
        if _YEAR.match(word):
            parsed.years.append(word)
        else:
            parsed.months.append(MONTHS[word.lower()])
        parsed.date_words.append(word)
    # read with its dates even when they are searched as words (nothing was dated then): a
    # question that names a time does not ask what holds now
    dated = parsed.dated if date_words else parse_query(original).dated
    parsed.about_now = not dated and asks_about_now(original, about_asker=parsed.about_asker)
    return parsed


def asks_about_asker(text: str) -> bool:
    """Is this a question about whoever asks it: a word of the first person ("I'm", "my"),
    and nothing that asks for the other side's words or how to do something (``_NOT_ABOUT_ASKER``)?"""
    first = any(w.casefold() in FIRST_PERSON for w in tokens(text))
    return first and _NOT_ABOUT_ASKER.search(text) is None


def asks_about_now(text: str, *, about_asker: bool) -> bool:
    """Does this question ask what holds now: it says "currently", "now", "latest"... (``NOW_WORDS``),
    or it is about the asker (``about_asker``) and nothing in it asks about the past
    (``PAST_WORDS``)? A question that names a time is not (``ParsedQuery.about_now``)."""
    if NOW_WORDS.search(text):
        return True
    return about_asker and PAST_WORDS.search(text) is None


def _framing(term: Term) -> bool:
    "Is the term a stopword, or a word that only frames a question about time ('happened')?"
    return term.stop or " ".join(term.tokens).casefold() in period.FRAMING


def _bare(piece: str) -> str:
    return piece.strip(".,;:!?\"'()[]{}")


def _reads_as_date(pieces: list[str], i: int) -> bool:
    "Is the month word at ``pieces[i]`` a date where it stands (see MONTH_LEADS)?"
    before = _bare(pieces[i - 1]).casefold() if i > 0 else ""
    after = _bare(pieces[i + 1]).casefold() if i + 1 < len(pieces) else ""
    if before in MONTH_LEADS or before.endswith("-"):
        return True
    return any(_YEAR.match(w) or _DAY.match(w) for w in (before, after))


def _display(piece: str) -> str:
    "The term as typed, case folded, without the punctuation around it (``isolation?``)."
    trimmed = re.sub(r"^[^\w]+|[^\w]+$", "", piece.casefold())
    return trimmed or " ".join(tokens(piece))


def is_date_word(word: str) -> bool:
    "Is ``word`` (as typed, punctuation around it ignored) a year or a month a query may filter by?"
    return _is_date_word(_bare(word))


def _is_date_word(word: str) -> bool:
    lower = word.casefold()
    if _YEAR.match(lower):
        return True
    if lower not in MONTHS:
        return False
    return lower not in _MONTH_NEEDS_CAPITAL or word[:1].isupper()


def all_of(groups: list[list[Term]]) -> str:
    "FTS5 expression: every group matches (a group matches when any of its terms does)."
    return " AND ".join(_group(g) for g in groups)


def any_of(groups: list[list[Term]]) -> str:
    "FTS5 expression: at least one term of any group matches."
    return " OR ".join(t.phrase for g in groups for t in g)


def _group(terms: list[Term]) -> str:
    if len(terms) == 1:
        return terms[0].phrase
    return "(" + " OR ".join(t.phrase for t in terms) + ")"


# The pieces of an FTS5 expression (https://sqlite.org/fts5.html#full_text_query_syntax): a
# quoted string ("" inside is a quote), a bareword (ASCII letters, digits, _, any non-ASCII
# character), a character of its syntax, a run of spaces; anything else is kept as written
# (FTS5 then says what is wrong with it).
_RAW_PIECE = re.compile(r'"(?:[^"]|"")*"|[\w\x1a\x80-\U0010ffff]+|[(){}:*^+,-]|\s+|.', re.S)
_OPERATORS = frozenset({"AND", "OR", "NOT"})


def raw_expression(expression: str) -> str:
    """A raw FTS5 expression (``--raw``) with each of its strings made the phrase of its
    tokens (``memdex.tokens``), as the index holds them; operators, NEAR groups, column names
    and the rest of the syntax stay as written. A prefix (``deploy*``) keeps its last word
    folded but not stemmed: it matches the tokens that begin so."""
    pieces = _RAW_PIECE.findall(expression)
    out: list[str] = []
    in_columns = False
    for i, piece in enumerate(pieces):
        following = next((p for p in pieces[i + 1 :] if not p.isspace()), "")
        before = next((p for p in reversed(pieces[:i]) if not p.isspace()), "")
        if piece == "{":
            in_columns = True
        elif piece == "}":
            in_columns = False
        string = piece.startswith('"') and len(piece) > 1 and piece.endswith('"')
        bare = not string and re.fullmatch(r"[\w\x1a\x80-\U0010ffff]+", piece) is not None
        if not (string or bare) or in_columns or following == ":" or before == ",":
            out.append(piece)  # syntax, a column name, or NEAR's distance
        elif bare and (piece in _OPERATORS or (piece == "NEAR" and following == "(")):
            out.append(piece)
        else:
            text = piece[1:-1].replace('""', '"') if string else piece
            apart = " " if out and out[-1].endswith('"') else ""  # two strings never run together
            out.append(apart + _raw_phrase(text, prefix=following == "*"))
    return "".join(out)


def _raw_phrase(text: str, *, prefix: bool) -> str:
    found = words_of.words(text)
    if prefix and found:
        toks = [t for w in found[:-1] for t in words_of.word_tokens(w)] + [found[-1]]
    else:
        toks = [t for w in found for t in words_of.word_tokens(w)]
    return '"' + " ".join(toks) + '"' if toks else '""'
