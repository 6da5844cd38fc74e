"""memdex mcp: a real MCP client session from the SDK, over stdio and over streamable HTTP."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

from .conftest import SAMPLE
from .messages_api import KEY, serving

mcp = pytest.importorskip("mcp")  # a dependency of memdex: installed with it
from mcp import ClientSession, StdioServerParameters, stdio_client  # noqa: E402
from mcp.types import TextContent  # noqa: E402

from memdex.doors.mcp_server import SPEC_ORDER  # noqa: E402
from memdex.query.options import OPTIONS  # noqa: E402

Call = tuple[str, dict[str, Any]]


def result_of(r: Any) -> dict[str, Any]:
    "What a tool call returned: the JSON it sent, and whether it is an error."
    text = "".join(c.text for c in r.content if isinstance(c, TextContent))
    return {"error": r.is_error, "data": json.loads(text), "structured": r.structured_content}


async def _session(read: Any, write: Any, calls: list[Call]) -> dict[str, Any]:
    async with ClientSession(read, write) as session:
        init = await session.initialize()
        tools = await session.list_tools()
        out: dict[str, Any] = {
            "instructions": init.instructions,
            "server": init.server_info.name,
            "tools": {t.name: t for t in tools.tools},
            "calls": [],
        }
        for name, args in calls:
            out["calls"].append(result_of(await session.call_tool(name, args)))
        return out


def over_stdio(
    db_path: Path, calls: list[Call], env: dict[str, str] | None = None, extra: tuple[str, ...] = ()
) -> dict[str, Any]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memdex", "--db", str(db_path), "mcp", *extra],
        env={"MEMDEX_RAISE_ERRORS": "1", **(env or {})},
    )

    async def go() -> dict[str, Any]:
        async with stdio_client(params) as (read, write):
            return await _session(read, write, calls)

    return anyio.run(go)


@pytest.fixture
def sample_db(sample: Any, db_path: Path) -> Path:
    return db_path


def test_an_mcp_client_lists_the_tools_and_reads_the_instructions(sample_db: Path) -> None:
    out = over_stdio(sample_db, [])
    assert out["server"] == "memdex"
    assert set(out["tools"]) == {"search_knowledge_base", "get_document", "index_status"}
    schema = out["tools"]["search_knowledge_base"].input_schema
    # every search option of the table, by its MCP name, and what a query can write (issue 36)
    expected = {"query", "output_file", "retrieve_artifacts", "retrieval_dir", *(o.mcp_name for o in OPTIONS)}
    assert set(schema["properties"]) == expected
    assert {"use_synonyms", "max_results", "tags", "kinds", "type", "scope", "raw", "full_text"} <= expected
    assert list(schema["properties"])[:9] == list(SPEC_ORDER)  # the spec's arguments first, in its order
    assert schema["additionalProperties"] is False and schema["required"] == ["query"]
    # the descriptions as the client sees them: dedented, not the docstrings' 8-space indent
    for tool in out["tools"].values():
        assert tool.description and not [line for line in tool.description.splitlines() if line[:1] == " "]
    described = out["tools"]["search_knowledge_base"].description
    assert "\nEach result has the spec's SearchResult fields" in described
    # written from the live index
    assert "19 documents" in out["instructions"] and "6 archive" in out["instructions"]
    assert "search_knowledge_base(query)" in out["instructions"]


@pytest.mark.slow
def test_search_answer_read_and_status_in_one_session(sample_db: Path, tmp_path: Path) -> None:
    calls: list[Call] = [
        ("search_knowledge_base", {"query": "deploy key rotation", "mode": "search", "max_results": 3}),
        ("search_knowledge_base", {"query": "What problems have we had with Chatty?"}),
        ("index_status", {}),
    ]
    out = over_stdio(sample_db, calls)
    found, answered, status = out["calls"]
    assert not found["error"] and found["data"] == found["structured"]
    results = found["data"]["results"]
    assert found["data"]["mode"] == "search" and 1 <= len(results) <= 3
    top = results[0]
    assert top["title"] == "Rotate the deploy keys" and top["match_layer"] == 1
    assert top["total_size_bytes"] > 0 and top["estimated_tokens"] == (top["total_size_bytes"] + 3) // 4
    assert [r["score"] for r in results] == sorted((r["score"] for r in results), reverse=True)
    # auto mode answers a question, citing sources that were sent
    answer = answered["data"]["answer"]
    assert answered["data"]["mode"] == "answer" and answer["method"] == "extractive"
    sent = {s["n"] for s in answer["sources"]}
    assert answer["details"] and all(set(d["citations"]) <= sent for d in answer["details"])
    assert answered["data"]["refinement"]["stopped"]
    assert status["data"]["counts"]["documents"] == 19

    # read the top search result's lines through get_document
    read = over_stdio(
        sample_db,
        [("get_document", {"id": top["id"], "line_start": top["line_start"], "line_end": top["line_end"]})],
    )["calls"][0]
    assert not read["error"] and "ssh-keygen" in read["data"]["text"]
    assert read["data"]["line_start"] == top["line_start"]


@pytest.mark.slow
def test_filters_and_semantic_reach_the_search(db_path: Path, shared_data: Path) -> None:
    "An agent narrows to its own project's sessions, a platform or dates, as the CLI does."
    from memdex.ingest.pipeline import index_paths
    from memdex.store import db

    conn = db.connect(db_path)
    index_paths(conn, [shared_data / "chats" / "codex", shared_data / "chats" / "claude-code"])
    conn.close()
    search = "search_knowledge_base"
    calls: list[Call] = [
        (search, {"query": "ollama", "mode": "search"}),
        (search, {"query": "ollama", "mode": "search", "project": "chatbot-ui"}),
        (search, {"query": "hook", "mode": "search", "platform": "claude-code"}),
        (search, {"query": "hook", "mode": "search", "branch": "soph/bugfix-for-inconsistent-session-state"}),
        (search, {"query": "ollama", "mode": "search", "until": "2024"}),
        (search, {"query": "ollama", "mode": "search", "semantic": False}),
        (search, {"query": "ollama", "mode": "search", "since": "soon"}),
    ]
    every, project, platform, branch, until, plain, bad = over_stdio(db_path, calls)["calls"]
    assert len(every["data"]["results"]) > 1
    assert [r["chat_id"] for r in project["data"]["results"]] == ["019a93b9-f380-7600-98ff-940e6b99603c"]
    assert project["data"]["filters"]["project"] == "chatbot-ui"
    assert project["data"]["results"][0]["resume"]["command"] == (  # issue 28: back into the session
        "cd /home/user/projects/temp/chatbot-ui && codex resume 019a93b9-f380-7600-98ff-940e6b99603c"
    )
    assert platform["data"]["results"] and {r["platform"] for r in platform["data"]["results"]} == {
        "claude-code"
    }
    assert [r["chat_id"] for r in branch["data"]["results"]] == ["198393f2-22db-477b-ac77-1825bea883ae"]
    assert until["data"]["results"] == []
    assert plain["data"]["semantic"]["reason"] == "turned off (--no-semantic)"
    assert bad["error"] and "since" in json.dumps(bad["data"])


@pytest.mark.slow
def test_typos_are_suggested_and_fixed_on_request(sample_db: Path) -> None:
    "Issue 26: a word no document holds gets 'did you mean'; fix_typos searches the suggestion."
    search = "search_knowledge_base"
    calls: list[Call] = [
        (search, {"query": "rebsae conflict", "mode": "search"}),
        (search, {"query": "rebsae conflict", "mode": "search", "fix_typos": True}),
        (search, {"query": "rebase", "mode": "search", "platform": "chatgtp"}),
    ]
    typed, fixed, platform = over_stdio(sample_db, calls)["calls"]
    assert "did you mean: rebase conflict?" in typed["data"]["notes"]
    assert typed["data"]["typos"]["searched_instead"] is False
    assert fixed["data"]["typos"]["searched_instead"] is True
    assert fixed["data"]["terms"] == ["rebase", "conflict"]
    assert fixed["data"]["notes"][0] == "searched “rebase conflict” instead (--fix-typos)"
    assert fixed["data"]["results"][0]["title"] == "Git: Rebase Conflicts"
    assert platform["data"]["notes"][-1].startswith(
        "no documents of platform chatgtp here; platforms in this index, nearest first: chatgpt"
    )


@pytest.mark.slow
def test_answers_come_from_claude_when_the_server_has_a_key(sample_db: Path) -> None:
    with serving() as api:
        out = over_stdio(
            sample_db,
            [
                (
                    "search_knowledge_base",
                    {"query": "What problems have we had with Chatty?", "mode": "answer"},
                )
            ],
            env={"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": api.url},
        )
    answer = out["calls"][0]["data"]["answer"]
    assert answer["method"] == "claude" and len(api.requests) == 1
    assert {c for d in answer["details"] for c in d["citations"]} <= {s["n"] for s in answer["sources"]}


ERRORS: list[tuple[Call, str, str]] = [
    (
        ("search_knowledge_base", {"query": "x", "limit": 3}),
        "invalid_parameter",
        "unknown parameter 'limit'",
    ),
    (
        ("search_knowledge_base", {"query": "x", "max_results": 0}),
        "invalid_parameter",
        "max_results: Input should be greater than or equal to 1",
    ),
    (
        ("search_knowledge_base", {"query": "x", "mode": "chat"}),
        "invalid_parameter",
        "mode: Input should be 'search', 'answer' or 'auto'",
    ),
    (("search_knowledge_base", {}), "invalid_parameter", "query: Field required"),
    (
        ("search_knowledge_base", {"query": "x", "granularity": "page"}),
        "invalid_parameter",
        "granularity: Input should be 'chat', 'chunk' or 'doc'",
    ),
    (("get_document", {}), "invalid_parameter", "exactly one of id or path"),
    (("get_document", {"id": 999999}), "not_found", "No document has id 999999"),
    (("get_document", {"path": "/etc/passwd"}), "not_found", "give an id or a path"),
    (
        ("get_document", {"id": 1, "line_start": 5, "line_end": 2}),
        "invalid_parameter",
        "line_end 2 is before line_start 5",
    ),
    (("no_such_tool", {}), "invalid_parameter", "no tool 'no_such_tool'"),
]


@pytest.fixture(scope="module")
def error_replies(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every call of ERRORS in one session of one server, by the call: a server starts in
    seconds, and each case checks its own reply (one session also shows that an error leaves
    the server answering the next call)."""
    from memdex.ingest.pipeline import index_paths
    from memdex.store import db

    work = tmp_path_factory.mktemp("mcp-errors")
    shutil.copytree(SAMPLE, work / "sample", ignore=shutil.ignore_patterns("__pycache__", "README.txt"))
    db_path = work / "memdex.db"
    conn = db.connect(db_path)
    index_paths(conn, [work / "sample" / name for name in ("memories", "serena", "notes", "chats")])
    conn.close()
    calls = [call for call, _, _ in ERRORS]
    return {
        json.dumps(call): reply
        for call, reply in zip(calls, over_stdio(db_path, calls)["calls"], strict=True)
    }


@pytest.mark.slow
@pytest.mark.parametrize(("call", "kind", "says"), ERRORS)
def test_errors_have_one_shape_and_say_how_to_retry(
    error_replies: dict[str, dict[str, Any]], call: Call, kind: str, says: str
) -> None:
    result = error_replies[json.dumps(call)]
    assert result["error"] is True
    error = result["data"]["error"]
    assert error["type"] == kind and says in error["message"], error
    assert error["retry"]


@pytest.mark.slow
def test_files_written_on_request(sample_db: Path, sample_copy: Path, tmp_path: Path) -> None:
    calls: list[Call] = [
        (
            "search_knowledge_base",
            {
                "query": "What problems have we had with Chatty?",
                "mode": "answer",
                "output_file": str(tmp_path),
                "retrieve_artifacts": True,
                "retrieval_dir": str(tmp_path / "got"),
            },
        ),
        (
            "search_knowledge_base",
            {
                "query": "ChatGPT",
                "retrieve_artifacts": True,
                "retrieval_dir": str(sample_copy / "notes" / "x"),
            },
        ),
    ]
    written, refused = over_stdio(sample_db, calls)["calls"]
    assert not written["error"]
    assert Path(written["data"]["output_file"]).parent == tmp_path
    assert (tmp_path / "got" / "manifest.json").exists() and written["data"]["retrieved"]["files"]
    assert refused["error"] and refused["data"]["error"]["type"] == "invalid_parameter"
    assert "inside an indexed root" in refused["data"]["error"]["message"]


def test_with_save_tool_only_save_results_writes(sample_db: Path, tmp_path: Path) -> None:
    "What memdex setup runs: an agent may run the search unasked, so the search writes nothing."
    tmp_path = tmp_path / "out"
    tmp_path.mkdir()
    calls: list[Call] = [
        ("search_knowledge_base", {"query": "ChatGPT", "mode": "search", "output_file": str(tmp_path)}),
        ("search_knowledge_base", {"query": "ChatGPT", "mode": "search", "retrieve_artifacts": True}),
        ("save_results", {"query": "ChatGPT", "mode": "search", "output_file": str(tmp_path)}),
        ("save_results", {"query": "ChatGPT", "output_file": False}),
        ("save_results", {"query": "ChatGPT", "mode": "search", "output_file": str(tmp_path / ".claude")}),
    ]
    out = over_stdio(sample_db, calls, extra=("--save-tool",))
    tools = out["tools"]
    assert set(tools) == {"search_knowledge_base", "get_document", "index_status", "save_results"}
    searched = set(tools["search_knowledge_base"].input_schema["properties"])
    assert not searched & {"output_file", "retrieve_artifacts", "retrieval_dir"}
    saved = tools["save_results"].input_schema["properties"]
    assert set(saved) == searched | {"output_file", "retrieve_artifacts", "retrieval_dir"}
    assert saved["output_file"]["default"] is True
    for name in ("search_knowledge_base", "get_document", "index_status"):
        assert tools[name].annotations.read_only_hint is True, name
    assert tools["save_results"].annotations.read_only_hint is False
    no_file, no_copy, written, nothing, agents = out["calls"]
    for refused in (no_file, no_copy):
        assert refused["error"] and refused["data"]["error"]["type"] == "invalid_parameter"
        said = refused["data"]["error"]["message"]
        assert "search_knowledge_base writes no files on this server: call save_results" in said
    assert not written["error"] and Path(written["data"]["output_file"]).parent == tmp_path
    assert [p.name for p in tmp_path.iterdir()] == [Path(written["data"]["output_file"]).name]
    assert nothing["error"] and "give one" in nothing["data"]["error"]["message"]
    assert agents["error"] and "where Claude Code reads instructions" in agents["data"]["error"]["message"]
    assert not (tmp_path / ".claude").exists()


# The spec's SearchResult and AnswerWithSources: each field's name and type.
SEARCH_RESULT = {
    "chat_id": str,
    "title": str,
    "platform": (str, type(None)),
    "date": (str, type(None)),
    "message_count": int,
    "chunk_count": int,
    "total_size_bytes": int,
    "estimated_tokens": int,
    "has_decisions": bool,
    "has_discoveries": bool,
    "has_procedures": bool,
    "has_artifacts": bool,
    "matching_chunks": list,
    "condensed_path": str,
    "match_layer": int,
    "relevance_score": float,
    "why_relevant": str,
}
ANSWER_WITH_SOURCES = {
    "question": str,
    "summary": str,
    "details": list,
    "caveats": (str, type(None)),
    "sources": list,
    "verification_paths": list,
    "total_source_tokens": int,
}


@pytest.mark.slow
def test_the_specs_parameters_and_shapes(sample_db: Path, tmp_path: Path) -> None:
    "An agent written against the spec: granularity chat, output_file true, no retrieval_dir."
    calls: list[Call] = [
        (
            "search_knowledge_base",
            {
                "query": "chatgpt",
                "mode": "search",
                "granularity": "chat",
                "output_file": True,
                "retrieve_artifacts": True,
            },
        ),
        ("search_knowledge_base", {"query": "chatgpt", "mode": "search", "granularity": "doc"}),
        ("search_knowledge_base", {"query": "What problems have we had with Chatty?", "mode": "answer"}),
    ]
    chat, doc, answered = over_stdio(sample_db, calls)["calls"]
    assert not chat["error"], chat["data"]
    data = chat["data"]
    assert data["granularity"] == "chat" and doc["data"]["granularity"] == "chat"  # doc: an alias
    assert [r["id"] for r in data["results"]] == [r["id"] for r in doc["data"]["results"]]
    for r in data["results"]:
        for name, kind in SEARCH_RESULT.items():
            assert isinstance(r[name], kind), (name, r[name])
        assert all(isinstance(n, int) for n in r["matching_chunks"])
        assert r["matching_chunks"] == [c["seq"] for c in r["chunks"]]  # the objects, renamed
        assert r["why_relevant"] == r["why"]["summary"]
        assert "relevance" not in r and "est_tokens" not in r  # the spec's names alone (#36)
    archived = next(r for r in data["results"] if r["kind"] == "archive")
    assert archived["chat_id"].startswith("chat-") and archived["message_count"] > 0
    assert archived["condensed_path"].endswith(".md") and Path(archived["condensed_path"]).is_file()
    # the results file and the retrieved folder go beside the index, timestamped
    written = Path(data["output_file"])
    assert written.parent == tmp_path / "results" and written.name.startswith("memdex-")
    retrieved = Path(data["retrieved"]["folder"])
    assert retrieved.parent == tmp_path / "retrieved" and (retrieved / "manifest.json").is_file()
    answer = answered["data"]["answer"]
    for name, kind in ANSWER_WITH_SOURCES.items():
        assert isinstance(answer[name], kind), (name, answer[name])
    assert answer["caveats"] == " ".join(answer["caveat_list"])
    assert answer["total_source_tokens"] == sum(s["tokens"] for s in answer["sources"])
    assert all(s["chat_id"] == s["key"] for s in answer["sources"])
    # the audit's answer findings: categories, only relevant sources, what each supports
    assert answer["categories"] and all(d["category"] for d in answer["details"])
    assert all(s["relevance_score"] >= 0.5 for s in answer["sources"]) or any(
        c.startswith("No result reached relevance 0.5") for c in answer["caveat_list"]
    )
    assert all(s["supports"] or not s["cited"] for s in answer["sources"])
    assert answer["verification_paths"][0] == answer["verify"]["primary"]
    assert "not_searched" in answered["data"]["refinement"]["coverage"]
    # and Patterns noticed across a list
    assert any(p["term"] == "chatgpt" and p["count"] >= 2 for p in data["patterns_noticed"])


@pytest.mark.slow
def test_without_an_index_the_server_still_starts_and_says_what_to_do(tmp_path: Path) -> None:
    missing = tmp_path / "none.db"
    out = over_stdio(missing, [("index_status", {}), ("search_knowledge_base", {"query": "x"})])
    assert "no usable index" in out["instructions"]
    for call in out["calls"]:
        assert call["error"] and call["data"]["error"]["type"] == "index_not_found"
        assert "memdex index PATH" in call["data"]["error"]["retry"]
    assert not missing.exists()  # a read-only server creates nothing


# -- streamable HTTP ----------------------------------------------------------------------------
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def http_server(db_path: Path) -> Iterator[str]:
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "memdex", "--db", str(db_path), "mcp", "--http", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env={**os.environ, "MEMDEX_RAISE_ERRORS": "1"},
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
                assert time.monotonic() < deadline, "memdex mcp --http did not start"
                time.sleep(0.05)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stderr:
            proc.stderr.close()


def post(url: str, headers: dict[str, str]) -> int:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "ping"}).encode()
    request = urllib.request.Request(
        url,
        data=body,
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.mark.slow
def test_streamable_http_on_loopback_with_an_origin_check(sample_db: Path) -> None:
    from mcp.client.streamable_http import streamable_http_client

    with http_server(sample_db) as url:

        async def go() -> dict[str, Any]:
            async with streamable_http_client(url) as (read, write):
                return await _session(
                    read, write, [("search_knowledge_base", {"query": "worktree", "mode": "search"})]
                )

        out = anyio.run(go)
        assert out["calls"][0]["data"]["results"][0]["title"]
        port = url.split(":")[2].split("/")[0]
        assert post(url, {"Origin": "http://evil.example"}) == 403
        assert post(url, {"Host": "evil.example"}) == 421
        assert post(url, {"Origin": f"http://127.0.0.1:{port}"}) not in (403, 421)


def test_the_http_server_refuses_to_start_off_loopback_without_being_told(sample_db: Path) -> None:
    from click.testing import CliRunner

    from memdex.doors.cli import cli

    result = CliRunner().invoke(cli, ["--db", str(sample_db), "mcp", "--http", "--host", "0.0.0.0"])
    assert result.exit_code == 2
    assert "--allow-remote" in result.stderr


@pytest.mark.slow
def test_a_question_with_no_words_to_search_for_answers_cleanly_into_a_file(
    sample_db: Path, tmp_path: Path
) -> None:
    "Previously the results file of an answer that ran no search crashed the tool (issue 13)."
    calls: list[Call] = [
        ("search_knowledge_base", {"query": "why?", "mode": "answer", "output_file": str(tmp_path)})
    ]
    (reply,) = over_stdio(sample_db, calls)["calls"]
    assert not reply["error"], reply["data"]
    written = Path(reply["data"]["output_file"])
    assert written.parent == tmp_path
    text = written.read_text()
    assert "has no words to search for" in text
    assert "no search run" in text
