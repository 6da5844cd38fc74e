"""Every option of a search, once: its name, type, default, help, command-line flag and MCP field.

The doors are made from this table: the click options of ``memdex search`` and ``memdex ask``
(``doors/cli/searching.py``), the arguments of the MCP tool ``search_knowledge_base``
(``doors/mcp_server.py``), the parameters of ``memdex serve``'s ``GET /search``
(``doors/serve/http.py``) and the fields of a ``--batch`` line (``doors/batch.py``). Each reads the
values it was given back through :func:`parse` (typed values: JSON, MCP, click) or
:func:`parse_text` (query-string text), into one :class:`Asked`: the ``SearchRequest`` and
what answer mode takes. So every door takes every option, by the same name.

An option's ``name`` is the one every door reads (and the field it sets); ``cli`` is its flag
(``--no-synonyms`` sets ``use_synonyms`` false); ``mcp`` is the argument name where the MCP
spec names it otherwise (``max_results``); ``aliases`` are older names still read.
What a query writes (``--output-file``, ``--retrieve``; MCP's ``output_file``,
``retrieve_artifacts``) is each door's own, not a search option: a served search writes none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memdex.errors import InvalidParameter
from memdex.query.request import GRANULARITIES, GRANULARITY_ALIASES, Filters, SearchRequest

MODES = ("search", "answer", "auto")  # what a query asks for (answer.modes decides auto)
_SAME = object()


@dataclass(frozen=True)
class Option:
    name: str  # the name every door reads, and the field it sets
    kind: type  # bool, int, float, str, or list (of str: the option repeats)
    default: Any
    help: str
    cli: str  # the command-line flag; "--no-x" sets the option false, "--x/--no-x" both ways
    part: str = "request"  # request (a SearchRequest field) | filter (a Filters field) | answer
    short: str | None = None
    mcp: str | None = None  # the MCP argument, when the spec names it otherwise
    aliases: tuple[str, ...] = ()
    choices: tuple[str, ...] | None = None
    unlisted: tuple[str, ...] = ()  # choices taken but not shown (granularity "doc": memdex's old name)
    low: float | None = None
    high: float | None = None
    mcp_high: float | None = None  # an agent asks for fewer than a person may (max_results <= 100)
    mcp_default: Any = _SAME
    nullable: bool = False  # None is a value (the default: "not given")
    low_open: bool = False  # ``low`` itself is out of range (a timeout of 0)

    @property
    def negated(self) -> bool:
        "Does the flag say the opposite of the option (``--no-synonyms`` for use_synonyms)?"
        return self.cli.startswith("--no-") and "/" not in self.cli

    @property
    def negative_names(self) -> tuple[str, ...]:
        "The names that set it false: the flag ``--no-synonyms`` as ``no_synonyms``, ``--no-semantic``."
        flags = [f for f in self.cli.split("/") if f.startswith("--no-")]
        return tuple(f.lstrip("-").replace("-", "_") for f in flags)

    @property
    def mcp_name(self) -> str:
        return self.mcp or self.name

    @property
    def default_for_mcp(self) -> Any:
        return self.default if self.mcp_default is _SAME else self.mcp_default

    @property
    def names(self) -> tuple[str, ...]:
        "Every name a query string or a batch line may give it by."
        flags = tuple(f.lstrip("-").replace("-", "_") for f in self.cli.split("/"))
        shorts = (self.short.lstrip("-"),) if self.short else ()
        return tuple(dict.fromkeys((self.name, self.mcp_name, *self.aliases, *flags, *shorts)))


OPTIONS: tuple[Option, ...] = (
    Option("limit", int, 10, "Most results to show.", "--limit", short="-n", mcp="max_results",
           low=1, mcp_high=100),
    Option("granularity", str, "chat", "One result per chat or document (doc: the same), or per "
           "matching chunk.", "--granularity", choices=GRANULARITIES, unlisted=tuple(GRANULARITY_ALIASES)),
    Option("max_tokens", int, None, "Stop adding results before their estimated tokens pass this budget.",
           "--max-tokens", low=1, nullable=True),
    Option("namespace", str, None, "Only this namespace (and those under it), e.g. decisions.", "--namespace",
           part="filter", nullable=True),
    Option("tags", list, (), "Only documents with this tag (repeat: all of them).", "--tag", part="filter",
           aliases=("tag",)),
    Option("type", str, None, "Only this memory type, e.g. semantic, episodic, procedural.", "--type",
           part="filter", nullable=True),
    Option("scope", str, None, "Only user or project memories.", "--scope", part="filter",
           choices=("user", "project"), nullable=True),
    Option("kinds", list, (), "Only this source kind (repeatable).", "--kind", part="filter",
           aliases=("kind",)),
    Option("platform", str, None, "Only chats from this platform, e.g. chatgpt, claude, claude-code, codex.",
           "--platform", part="filter", nullable=True),
    Option("project", str, None, "Only agent sessions run in this folder: its path, or its last part(s), "
           "e.g. memdex.", "--project", part="filter", nullable=True),
    Option("branch", str, None, "Only agent sessions on this git branch.", "--branch", part="filter",
           nullable=True),
    Option("since", str, None, "Only documents dated on or after YYYY[-MM[-DD]].", "--since", part="filter",
           nullable=True),
    Option("until", str, None, "Only documents dated on or before YYYY[-MM[-DD]].", "--until", part="filter",
           nullable=True),
    Option("use_synonyms", bool, True, "Also match synonyms (layers 2 and 4); --no-synonyms skips them.",
           "--no-synonyms", aliases=("synonyms",)),
    Option("fix_typos", bool, False, "Search the nearest indexed words for words no document holds (else "
           "only suggested, unless nothing matched).", "--fix-typos"),
    Option("raw", bool, False, "QUERY is FTS5 syntax (AND, OR, NEAR, prefix*), its words made tokens.",
           "--raw"),
    Option("full_text", bool, False, "Include each result's text in the JSON.", "--full", aliases=("full",)),
    Option("semantic", bool, None, "Search by meaning too (default: on when the index has vectors; see "
           "memdex embed).", "--semantic/--no-semantic", nullable=True),
    Option("patterns", bool, True, "Say what two or more of the results shown share (Patterns noticed).",
           "--patterns/--no-patterns"),
    Option("mode", str, "search", "search: a ranked list; answer: a cited answer (memdex ask); auto: from "
           "the wording.", "--mode", part="answer", choices=MODES, mcp_default="auto"),
    Option("rounds", int, None, "Search rounds, each refined from the last (default: 3 in answer mode, 1 in "
           "search mode).", "--rounds", part="answer", low=1, high=3, nullable=True),
    Option("llm_refine", bool, False, "Claude proposes each next round's search terms.", "--llm-refine",
           part="answer"),
    Option("min_relevance", float, None, "Answers send only sources this relevant, unless none is (default "
           "0.5; 0 sends all that fit).", "--min-relevance", part="answer", low=0, high=1, nullable=True),
    Option("use_llm", bool, True, "Answer with Claude when a key is set; --no-llm answers extractively.",
           "--no-llm", part="answer", aliases=("llm",)),
    Option("model", str, None, "Claude model for answers (default: $MEMDEX_MODEL, else {default_model}).",
           "--model", part="answer", nullable=True),
    Option("timeout", float, None, "Seconds to wait for Claude before answering without it (default 60).",
           "--timeout", part="answer", low=0, low_open=True, nullable=True),
)  # fmt: skip

_BY_NAME: dict[str, Option] = {n: o for o in OPTIONS for n in o.names}


def find(name: str) -> Option | None:
    "The option a door's name (its own, an alias, the flag without dashes) stands for."
    return _BY_NAME.get(name.replace("-", "_"))


@dataclass
class Asked:
    "What a door was asked: the search, and how answer mode goes about it (``dispatch.run``)."

    request: SearchRequest
    answer: dict[str, Any] = field(default_factory=dict)


def parse(query: str, values: dict[str, Any]) -> Asked:
    """The request and answer options from typed values (a batch line's JSON, MCP arguments,
    click's keywords), by any of their names. An unknown name, or a value of the wrong type or
    out of range, is an InvalidParameter naming it."""
    chosen: dict[Option, Any] = {}
    for name, value in values.items():
        option = find(name)
        if option is None:
            known = ", ".join(o.name for o in OPTIONS)
            raise InvalidParameter(f"unknown option {name!r}; known options: id, query, {known}")
        if name.replace("-", "_") in option.negative_names:
            value = _negate(option, name, value)
        chosen[option] = _checked(option, name, value)
    return _asked(query, chosen)


def parse_text(query: str | None, pairs: list[tuple[str, str]], refused: tuple[str, ...] = ()) -> Asked:
    """The same from a query string's text (``GET /search``): ``q`` is the query, a flag is true
    as ``1``, ``true``, ``yes``, ``on`` or empty, a repeated option repeats. ``refused``: names
    the door does not take, each an InvalidParameter saying so."""
    values: dict[str, Any] = {}
    for raw, text in pairs:
        name = raw.replace("-", "_")
        if name in ("q", "query"):
            query = text
            continue
        if name in refused:
            raise InvalidParameter(f"{raw}: memdex serve is read-only over HTTP; it writes no files.")
        option = find(name)
        if option is None:
            values[raw] = text  # parse says it is unknown, with the names it knows
        elif option.kind is list:
            values.setdefault(raw, []).append(text)
        else:
            values[raw] = _from_text(option, raw, text)
    if query is None:
        raise InvalidParameter("give the query as q, e.g. /search?q=deploy+key")
    return parse(query, values)


def _asked(query: str, chosen: dict[Option, Any]) -> Asked:
    request: dict[str, Any] = {}
    filters: dict[str, Any] = {}
    answer: dict[str, Any] = {}
    for option, value in chosen.items():
        into = {"request": request, "filter": filters, "answer": answer}[option.part]
        into[option.name] = list(value) if option.kind is list else value
    return Asked(SearchRequest(query, filters=Filters(**filters), **request), answer)


def _checked(option: Option, name: str, value: Any) -> Any:
    if value is None and option.nullable:
        return None
    kind = option.kind
    if kind is list:
        listed = value if isinstance(value, list | tuple) else [value]
        if not all(isinstance(v, str) for v in listed):
            raise InvalidParameter(f"option {name!r} must be a string or a list of strings, not {value!r}")
        return list(listed)
    if kind is float and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    if not isinstance(value, kind) or (kind is not bool and isinstance(value, bool)):
        raise InvalidParameter(f"option {name!r} must be {kind.__name__}, not {value!r}")
    if option.choices and value not in option.choices + option.unlisted:
        raise InvalidParameter(f"{name} must be one of {', '.join(option.choices)}, not {value!r}.")
    if isinstance(value, int | float):
        low, high = option.low, option.high
        under = low is not None and (value < low or (option.low_open and value == low))
        if under or (high is not None and value > high) or value != value:
            if high is not None:
                bound = f"from {low:g} to {high:g}"
            else:
                bound = f"more than {low:g}" if option.low_open else f"{low:g} or more"
            raise InvalidParameter(f"{name} must be {bound}, not {value!r}.")
    return value


def _negate(option: Option, name: str, value: Any) -> Any:
    "A flag that says the opposite (``no_synonyms``): its value turned round."
    if not isinstance(value, bool):
        raise InvalidParameter(f"option {name!r} must be bool, not {value!r}")
    return not value


_TRUE, _FALSE = ("", "1", "true", "yes", "on"), ("0", "false", "no", "off")


def _from_text(option: Option, name: str, text: str) -> Any:
    "A query string's text as the option's type; InvalidParameter names what is wrong."
    if option.kind is bool:
        if text.lower() in _TRUE:
            return True
        if text.lower() in _FALSE:
            return False
        raise InvalidParameter(f"{name} must be true or false, not {text!r}.")
    if option.kind in (int, float):
        try:
            number = option.kind(text)
        except ValueError:
            raise InvalidParameter(f"{name} must be a number, not {text!r}.") from None
        return number
    return text
