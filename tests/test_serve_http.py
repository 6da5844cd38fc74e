"""memdex serve over HTTP: real servers on 127.0.0.1, real requests, the real MCP client.

The JSON endpoint answers what the command line prints for --json; hostile input never gets
a 500; with a token, a request without it gets 401 and an empty body; MCP writes no files.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

import anyio
import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.doors.serve import client

from .test_mcp import _session
from .test_serve import Served, sample_index, start_server, stop_server, without_timings

TOKEN = "correct-horse-battery-staple-0123456789"


def address(served: Served) -> tuple[str, int]:
    url = (client.ping(str(served.db)) or {})["http"]
    parts = urlsplit(url)
    return str(parts.hostname), int(parts.port or 80)


def get(
    served: Served, path: str, headers: dict[str, str] | None = None
) -> tuple[int, bytes, dict[str, str]]:
    "One GET with the path as given (odd bytes included), over a connection of its own."
    host, port = address(served)
    conn = http.client.HTTPConnection(host, port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, response.read(), {k.lower(): v for k, v in response.getheaders()}
    finally:
        conn.close()


@pytest.fixture(scope="module")
def open_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    "Loopback, no token, read-only: the sample index for searches."
    server = start_server(
        sample_index(tmp_path_factory.mktemp("http")), "--read-only", "--http", "--port", "0"
    )
    yield server
    assert stop_server(server) == 0, server.log.read_text()


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("token")
    token = folder / "token"
    token.write_text(TOKEN + "\n")
    token.chmod(0o600)
    server = start_server(
        sample_index(folder), "--read-only", "--http", "--port", "0", "--token-file", str(token)
    )
    yield server
    assert stop_server(server) == 0, server.log.read_text()


def cli_json(db_path: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["--db", str(db_path), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("params", "args"),
    [
        ({"q": "postgres billing"}, ()),
        (
            {"q": "watcher", "granularity": "chunk", "n": "3", "full": ""},
            ("--granularity", "chunk", "-n", "3", "--full"),
        ),
        ({"q": "October 2025"}, ()),
        (
            {"q": "deploy", "kind": "memory", "no-synonyms": "1", "max-tokens": "400"},
            ("--kind", "memory", "--no-synonyms", "--max-tokens", "400"),
        ),
    ],
)
def test_json_search_is_what_the_command_line_prints(
    open_server: Served, params: dict[str, str], args: tuple[str, ...]
) -> None:
    status, body, headers = get(open_server, "/search?" + urlencode(params))
    assert status == 200 and headers["content-type"] == "application/json"
    expected = cli_json(open_server.db, "search", params["q"], *args, "--json")
    assert without_timings(body.decode()) == without_timings(expected)


@pytest.mark.slow
def test_show_and_health(open_server: Served) -> None:
    status, body, _ = get(open_server, "/show?ref=1&lines=2-4")
    assert status == 200
    assert body.decode() == cli_json(open_server.db, "show", "1", "--lines", "2-4", "--json")
    status, body, _ = get(open_server, "/health")
    assert status == 200 and json.loads(body)["ok"] is True
    assert get(open_server, "/health", {"Host": "evil.example"})[0] == 421  # DNS rebinding


HOSTILE = [
    "/search?q=%22",
    "/search?q=AND",
    "/search?q=foo%3A",
    "/search?q=-x",
    "/search?q=NEAR(",
    "/search?q=%00",
    "/search?q=%ff%fe",
    "/search?q=" + "a%20" * 3000,
    "/search?q=NEAR(&raw=1",
    "/search?q=x&raw=1&mode=answer",
    "/search?q=x&limit=-1",
    "/search?q=x&limit=abc",
    "/search?q=x&limit=99999999999999999999999",
    "/search?q=x&semantic=maybe",
    "/search?q=x&since=2026-13-45",
    "/search?q=x&output_file=%2Ftmp%2Fx.md",
    "/search?q=x&retrieve=%2Ftmp",
    "/search?q=x&bogus=1",
    "/search?q=x&granularity=%00",
    "/search",
    "/show",
    "/show?ref=..%2F..%2F..%2Fetc%2Fpasswd",
    "/show?ref=%2Fetc%2Fpasswd",
    "/show?ref=1&lines=a-b",
    "/show?ref=1&max_tokens=0",
    "/show?ref=99999999999999999999999",
    "/show?ref=%C2%B2",
    "/show?ref=1&lines=99999999999999999999999-",
]


@pytest.mark.slow
@pytest.mark.parametrize("path", HOSTILE)
def test_hostile_requests_never_get_a_500(open_server: Served, path: str) -> None:
    status, body, _ = get(open_server, path)
    assert status in (200, 400, 404), (status, body[:300])
    data = json.loads(body)
    if status != 200:
        assert set(data["error"]) == {"type", "message", "retry"}
    assert b"root:" not in body  # nothing outside the indexed roots is read


@pytest.mark.slow
@pytest.mark.parametrize(
    "authorization",
    [
        None,
        f"Bearer {TOKEN}x",
        f"Bearer {TOKEN[:-1]}",
        f"Basic {TOKEN}",
        TOKEN,
        "Bearer",
        f"Bearer  {quote('é')}",
    ],
)
def test_without_the_token_401_and_nothing_else(token_server: Served, authorization: str | None) -> None:
    headers = {"Authorization": authorization} if authorization else {}
    for path in ("/search?q=billing", "/show?ref=1", "/health", "/mcp"):
        status, body, response_headers = get(token_server, path, headers)
        assert (status, body) == (401, b"")
        assert response_headers["www-authenticate"] == "Bearer"


@pytest.mark.slow
def test_with_the_token_search_and_mcp_read_and_write_nothing(token_server: Served) -> None:
    bearer = {"Authorization": f"Bearer {TOKEN}"}
    status, body, _ = get(token_server, "/search?q=billing", bearer)
    assert status == 200 and "PostgreSQL" in body.decode()
    host, port = address(token_server)

    async def go() -> dict[str, Any]:
        from mcp.client.streamable_http import streamable_http_client
        from mcp.shared._httpx_utils import create_mcp_http_client

        async with create_mcp_http_client(headers=bearer) as http_client:
            async with streamable_http_client(f"http://{host}:{port}/mcp", http_client=http_client) as (
                read,
                write,
            ):
                calls = [
                    ("search_knowledge_base", {"query": "billing", "mode": "search"}),
                    ("search_knowledge_base", {"query": "billing", "output_file": True}),
                    ("get_document", {"id": 1, "line_start": 1, "line_end": 2}),
                ]
                return await _session(read, write, calls)

    out = anyio.run(go)
    found, wrote, shown = out["calls"]
    assert not found["error"] and found["data"]["results"][0]["title"] == "Billing stays on PostgreSQL"
    assert wrote["error"] and wrote["data"]["error"]["type"] == "invalid_parameter"
    assert not (token_server.db.parent / "results").exists()
    assert not shown["error"] and shown["data"]["line_end"] == 2
