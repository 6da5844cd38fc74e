"""The shape the design documents give answers and result lists, through the CLI and the
Messages API server: findings by category with an analysis, only relevant sources, sources
saying what claim they support, primary and related paths, coverage, timeline wordings, and
"Patterns noticed" across the results of a search."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.query.search import search

from .messages_api import Reply, serving, sources_in, tool_use
from .test_answer import QUESTION, ask, ask_json, sample_db, with_server

__all__ = ["sample_db"]  # the fixture, used by name


def memdex(db_path: Path, *args: str) -> Any:
    result = CliRunner().invoke(cli, ["--db", str(db_path), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


# -- answers by category -----------------------------------------------------------------------
@pytest.mark.slow
def test_claude_groups_the_findings_and_writes_the_analysis(sample_db: Path) -> None:
    with serving() as server:
        answer = ask_json(sample_db, QUESTION, env=with_server(server))["answer"]
        text = ask(sample_db, QUESTION, env=with_server(server)).stdout
    schema = server.requests[0]["tools"][0]["input_schema"]
    assert "analysis" in schema["required"]
    assert "category" in schema["properties"]["details"]["items"]["required"]
    assert answer["grouped_by"] == "the model"
    names = [c["name"] for c in answer["categories"]]
    assert names == ["First findings", "Other findings"]
    # each category's details are numbered together, in the order shown
    numbers = [n for c in answer["categories"] for n in c["details"]]
    assert numbers == list(range(1, len(answer["details"]) + 1))
    assert answer["analysis"].startswith("The findings agree") and "[1]" in answer["analysis"]
    assert "### First findings" in text and "### Other findings" in text
    assert text.index("### First findings") < text.index("### Other findings") < text.index("## Analysis")


def test_without_a_model_findings_are_grouped_by_what_their_sources_are_filed_under(
    sample_db: Path,
) -> None:
    answer = ask_json(sample_db, QUESTION, "--no-llm")["answer"]
    field = answer["grouped_by"]
    assert field in ("namespace", "type", "platform", "kind")
    by_n = {s["n"]: s for s in answer["sources"]}
    for d in answer["details"]:
        source = by_n[d["citations"][0]]
        assert d["category"] == f"{field}: {source[field] if field in source else source['platform']}"
    assert any(f"grouped by their sources' {field}" in c for c in answer["caveat_list"])
    text = ask(sample_db, QUESTION, "--no-llm").stdout
    assert f"_Grouped by the sources' {field}: no model named the categories._" in text


def test_a_timeline_keeps_date_order_and_names_no_categories(sample_db: Path) -> None:
    answer = ask_json(sample_db, "ChatGPT over time", "--no-llm")["answer"]
    assert answer["timeline"] is True
    assert answer["grouped_by"] is None and all(d["category"] is None for d in answer["details"])


def test_the_specs_timeline_wordings_give_timelines(sample_db: Path) -> None:
    for question in ("CLI evolution", "evolution of the CLI", "history of ChatGPT", "ChatGPT over time"):
        out = json.loads(memdex(sample_db, "search", question, "--mode", "auto", "--json", "--no-llm").stdout)
        assert out["mode"] == "answer", question
        assert out["answer"]["timeline"] is True, question
        assert out["answer"]["sources"], question


# -- which sources are sent ---------------------------------------------------------------------
def test_sources_below_half_relevance_are_not_sent_and_the_answer_says_so(sample_db: Path) -> None:
    answer = ask_json(sample_db, "how do we rotate deploy keys?", "--no-llm")["answer"]
    assert answer["sources"] and all(s["relevance_score"] >= 0.5 for s in answer["sources"])
    assert any("below 0.5 were not sent" in c or "below 0.5 was not sent" in c for c in answer["caveat_list"])
    everything = ask_json(sample_db, "how do we rotate deploy keys?", "--no-llm", "--min-relevance", "0")
    weak = [s for s in everything["answer"]["sources"] if s["relevance_score"] < 0.5]
    assert weak, "the question must find weak matches too, or this test proves nothing"
    assert not any("not sent" in c for c in everything["answer"]["caveat_list"])


def test_when_no_source_reaches_half_the_best_are_sent_and_the_answer_says_so(sample_db: Path) -> None:
    question = "what did the rate limits and the hallucinated citations and the soup recipe have in common?"
    answer = ask_json(sample_db, question, "--no-llm")["answer"]
    assert answer["sources"] and max(s["relevance_score"] for s in answer["sources"]) < 0.5
    assert any(c.startswith("No result reached relevance 0.5") for c in answer["caveat_list"])


def test_a_floor_no_source_reaches_sends_everything_found_and_says_so(sample_db: Path) -> None:
    "A weak answer beats none; the caveat says it is weak (a floor of 1 is out of reach)."
    everything = ask_json(sample_db, QUESTION, "--no-llm", "--min-relevance", "0")["answer"]["sources"]
    strict = ask_json(sample_db, QUESTION, "--no-llm", "--min-relevance", "1")["answer"]
    assert max(s["relevance_score"] for s in everything) < 1, "or this test proves nothing"
    assert [s["chat_id"] for s in strict["sources"]] == [s["chat_id"] for s in everything]
    assert any(
        c.startswith("No result reached relevance 1") and "every result found was sent" in c
        for c in strict["caveat_list"]
    )


def _reply_by_hand(body: dict[str, Any]) -> Reply:
    """A model's answer whose categories interleave (A, B, A), whose third claim cites a source
    never sent, and whose analysis cites sources no claim cites."""
    tool = body["tool_choice"]["name"]
    if tool == "next_search":
        return tool_use(body, tool, {"terms": ["truncation"]})
    n = [n for n, _ in sources_in(body)]
    assert len(n) >= 3, "the question must send three sources, or this test proves nothing"
    details = [
        {"text": f"Limits come first [{n[0]}].", "citations": [n[0]], "category": "Limits"},
        {"text": f"Context is lost [{n[0]}].", "citations": [n[0]], "category": "Context"},
        {"text": "A claim from nowhere [99].", "citations": [99], "category": "Limits"},
    ]
    data = {"summary": f"Two kinds of trouble [{n[0]}].", "details": details, "caveats": []}
    data["analysis"] = f"Both trace back to [{n[1]}] and [{n[2]}]."
    return tool_use(body, tool, data)


def test_a_model_answer_names_the_right_detail_and_cites_through_its_analysis(sample_db: Path) -> None:
    with serving(_reply_by_hand) as server:
        answer = ask_json(sample_db, QUESTION, "--rounds", "1", env=with_server(server))["answer"]
    assert [d["category"] for d in answer["details"]] == ["Limits", "Limits", "Context"]
    assert "Dropped citation [99] (detail 2): no source 99 was sent." in answer["caveat_list"]
    by_n = {s["n"]: s for s in answer["sources"]}
    cited_in_analysis = [by_n[2], by_n[3]]
    assert all(s["cited"] and s["why_cited"].endswith("(the analysis)") for s in cited_in_analysis)
    assert all(s["locations"][0] in answer["verification_paths"] for s in cited_in_analysis)
    assert by_n[1]["why_cited"] == "supports “Limits come first.” (details 1, 3)"  # no space before the stop


# -- sources, paths to verify, coverage --------------------------------------------------------
def test_sources_say_the_claim_they_support_and_where_to_verify(sample_db: Path) -> None:
    answer = ask_json(sample_db, QUESTION, "--no-llm")["answer"]
    details = {d["n"]: d for d in answer["details"]}
    for s in answer["sources"]:
        if not s["cited"]:
            continue
        assert s["supports"], s
        first = details[s["supports"][0]]["text"]
        quoted = s["why_cited"].split("“")[1].split("”")[0]
        assert first.startswith(quoted.rstrip("…")), (quoted, first)
    verify = answer["verify"]
    assert verify["primary"] and verify["primary"] not in verify["related"]
    assert answer["verification_paths"] == [verify["primary"], *verify["related"]]
    text = ask(sample_db, QUESTION, "--no-llm").stdout
    chat = next(s for s in answer["sources"] if s["cited"])
    assert f"— {chat['chat_id']} · {chat['platform'] or chat['kind']}" in text
    assert "why cited: supports “" in text
    assert f"- Primary: {verify['primary']}" in text
    assert "## To verify" in text


def test_the_markdown_answer_shows_its_coverage(sample_db: Path) -> None:
    out = ask_json(sample_db, "how do we rotate deploy keys?", "--no-llm")
    coverage = out["refinement"]["coverage"]
    assert coverage["namespaces_searched"][0] == "all"
    text = ask(sample_db, "how do we rotate deploy keys?", "--no-llm").stdout
    line = next(x for x in text.splitlines() if x.startswith("Coverage: searched "))
    assert all(ns in line for ns in coverage["namespaces_searched"])
    assert ("not searched" in line) == bool(coverage["not_searched"])


# -- patterns noticed --------------------------------------------------------------------------
def test_a_search_says_what_its_results_share(sample: sqlite3.Connection, db_path: Path) -> None:
    result = search(sample, "chatgpt", limit=8)
    shown = len({h.id for h in result.hits})
    platform = next(p for p in result.patterns if p["term"] == "chatgpt")
    assert platform["kind"] == "platform" and platform["of"] == shown
    # a document counts once, whether chatgpt is its platform, a tag or a topic
    on_chatgpt = sum(1 for h in {h.id: h for h in result.hits}.values() if h.platform == "chatgpt")
    assert on_chatgpt <= platform["count"] <= shown
    assert all(p["count"] >= 2 for p in result.patterns)
    text = memdex(db_path, "search", "chatgpt", "--limit", "8").stdout
    assert f"Patterns noticed in the {shown} documents shown: chatgpt" in text
    out = json.loads(memdex(db_path, "search", "chatgpt", "--limit", "8", "--json").stdout)
    assert out["patterns_noticed"] == result.patterns
    refined = json.loads(
        memdex(db_path, "search", "chatgpt", "--limit", "8", "--rounds", "2", "--json").stdout
    )
    assert any(p["term"] == "chatgpt" for p in refined["patterns_noticed"])  # of the fused list
    assert search(sample, "chatgpt", limit=8, patterns=False).patterns == []
    assert search(sample, "chatgpt", limit=1).patterns == []  # one result shares nothing


def test_a_results_file_has_the_patterns(db_path: Path, sample: sqlite3.Connection, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    memdex(db_path, "search", "chatgpt", "--limit", "8", "--output-file", str(out / "r.md"))
    assert "Patterns noticed in the" in (out / "r.md").read_text()


def test_batch_lines_ask_for_patterns(db_path: Path, sample: sqlite3.Connection, tmp_path: Path) -> None:
    lines = tmp_path / "q.jsonl"
    lines.write_text('{"id": 1, "query": "chatgpt"}\n{"id": 2, "query": "chatgpt", "patterns": true}\n')
    replies = [json.loads(x) for x in memdex(db_path, "search", "--batch", str(lines)).stdout.splitlines()]
    assert "patterns_noticed" not in replies[0]  # off by default: lines are read by programs
    assert any(p["term"] == "chatgpt" for p in replies[1]["patterns_noticed"])
