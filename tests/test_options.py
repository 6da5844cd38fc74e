"""One option table (memdex/query/options.py), every door made from it (issue 36).

Previously an option had up to four names (--no-synonyms, use_synonyms, synonyms, full vs
full_text) and the MCP tool took six of the ten filters the command line did."""

from __future__ import annotations

from typing import Any

import click
import pytest

from memdex.doors.cli import cli
from memdex.doors.mcp_server import search_signature
from memdex.errors import InvalidParameter
from memdex.query.options import OPTIONS, find, parse, parse_text

# A value for each option that is not its default, as typed data and as query-string text.
VALUES: dict[str, tuple[Any, str]] = {
    "limit": (3, "3"),
    "granularity": ("chunk", "chunk"),
    "max_tokens": (500, "500"),
    "namespace": ("decisions", "decisions"),
    "tags": (["git"], "git"),
    "type": ("semantic", "semantic"),
    "scope": ("project", "project"),
    "kinds": (["serena"], "serena"),
    "platform": ("claude", "claude"),
    "project": ("memdex", "memdex"),
    "branch": ("main", "main"),
    "since": ("2025-01", "2025-01"),
    "until": ("2025-12", "2025-12"),
    "use_synonyms": (False, "false"),
    "fix_typos": (True, "true"),
    "raw": (True, "1"),
    "full_text": (True, "yes"),
    "semantic": (False, "off"),
    "patterns": (False, "0"),
    "mode": ("answer", "answer"),
    "rounds": (2, "2"),
    "llm_refine": (True, "true"),
    "min_relevance": (0.25, "0.25"),
    "use_llm": (False, "false"),
    "model": ("claude-x", "claude-x"),
    "timeout": (5.0, "5"),
}


def _fields(asked: Any) -> dict[str, Any]:
    "Every value a parse made: the request's fields, its filters' and the answer options."
    request = {k: v for k, v in asked.request.__dict__.items() if k not in ("query", "filters")}
    return {**request, **asked.request.filters.__dict__, **asked.answer}


def test_the_table_has_a_value_for_every_option() -> None:
    assert set(VALUES) == {o.name for o in OPTIONS}


def test_the_command_line_mcp_and_http_take_the_same_options() -> None:
    "The click options, the MCP arguments and the names GET /search and batch lines read."
    context = click.Context(cli)
    search = {p.name for p in cli.get_command(context, "search").params}  # type: ignore[union-attr]
    ask = {p.name for p in cli.get_command(context, "ask").params}  # type: ignore[union-attr]
    mcp = set(search_signature().parameters)
    for option in OPTIONS:
        assert option.name in search, option.name
        assert option.name in ask or option.name == "mode", option.name  # ask is answer mode
        assert option.mcp_name in mcp, option.name
        assert find(option.name) is option and find(option.cli.split("/")[0].lstrip("-")) is option


@pytest.mark.parametrize("option", OPTIONS, ids=lambda o: o.name)
def test_every_option_reaches_the_request_by_every_name(option: Any) -> None:
    typed, text = VALUES[option.name]
    for name in option.names:
        value = not typed if name in option.negative_names else typed
        if option.kind is bool and name in option.negative_names:
            text_value = "false" if typed else "true"
        else:
            text_value = text
        assert _fields(parse("q", {name: value}))[option.name] == typed, name
        assert (
            _fields(parse_text(None, [("q", "q"), (name.replace("_", "-"), text_value)]))[option.name]
            == typed
        ), name


@pytest.mark.parametrize(
    ("values", "message"),
    [
        ({"limt": 3}, "unknown option 'limt'; known options: id, query, limit, granularity"),
        ({"limit": "3"}, "option 'limit' must be int, not '3'"),
        ({"limit": True}, "option 'limit' must be int, not True"),
        ({"limit": 0}, "limit must be 1 or more, not 0."),
        ({"rounds": 4}, "rounds must be from 1 to 3, not 4."),
        ({"timeout": 0}, "timeout must be more than 0, not 0.0."),
        ({"granularity": "page"}, "granularity must be one of chat, chunk, not 'page'."),
        ({"tags": [1]}, "option 'tags' must be a string or a list of strings, not [1]"),
    ],
)
def test_a_bad_value_names_the_option(values: dict[str, Any], message: str) -> None:
    with pytest.raises(InvalidParameter) as raised:
        parse("q", values)
    assert str(raised.value).startswith(message)


def test_query_string_text_and_what_a_served_search_refuses() -> None:
    asked = parse_text(None, [("q", "deploy"), ("n", "4"), ("no-synonyms", ""), ("tag", "a"), ("tag", "b")])
    assert (asked.request.query, asked.request.limit, asked.request.use_synonyms) == ("deploy", 4, False)
    assert asked.request.filters.tags == ["a", "b"]
    for bad, message in [
        ([("q", "x"), ("limit", "many")], "limit must be a number, not 'many'."),
        ([("q", "x"), ("raw", "perhaps")], "raw must be true or false, not 'perhaps'."),
        ([("limit", "3")], "give the query as q, e.g. /search?q=deploy+key"),
        ([("q", "x"), ("output-file", "a.md")], "output-file: memdex serve is read-only over HTTP"),
    ]:
        with pytest.raises(InvalidParameter) as raised:
            parse_text(None, bad, refused=("output_file",))
        assert str(raised.value).startswith(message)
