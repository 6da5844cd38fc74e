"""What memdex does with whatever Claude (here: the local Messages API server) sends back, and
the edges of answer mode: citation forms, malformed replies, timelines, refinement words,
results files and retrieval."""

from __future__ import annotations

import json
import os
import re
import sqlite3
import stat
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memdex.answer import citations
from memdex.answer.refine import Round, _stop_reason
from memdex.doors.cli import cli
from memdex.ingest.pipeline import index_paths
from memdex.models import Hit, SearchResult

from . import messages_api as api
from .messages_api import serving
from .test_answer import QUESTION, ask, ask_json, assert_citations_resolve, with_server


@pytest.fixture
def sample_db(sample: sqlite3.Connection, db_path: Path) -> Path:
    return db_path


def reply_with(**fields: Any) -> api.Behaviour:
    "A reply to the answer tool whose input is ``fields``, the rest filled in sensibly."

    def behaviour(body: dict[str, Any]) -> api.Reply:
        data = {"summary": "Summary [1].", "details": [], "caveats": [], **fields}
        return api.tool_use(body, "answer", data)

    return behaviour


# -- citation forms ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("text", "allowed", "kept", "dropped"),
    [
        ("Rate limits [1].", {1}, "Rate limits [1].", []),
        ("Both [1, 3] and [2].", {1, 2, 3}, "Both [1, 3] and [2].", []),
        ("A range [1-3].", {1, 2}, "A range [1, 2].", [3]),
        ("En dash [11–13].", {1}, "En dash.", [11, 12, 13]),
        ("Named [Source 99].", {1}, "Named.", [99]),
        ("Footnote [^99] here.", {1}, "Footnote here.", [99]),
        ("Mixed [1; 99].", {1}, "Mixed [1].", [99]),
        ("Run `ls -la .` first [99].", {1}, "Run `ls -la .` first.", [99]),
        ("cd .. then items[0] and `x[2]`", {1}, "cd .. then items[0] and `x[2]`", []),
        ("Adjacent [1][2].", {1, 2}, "Adjacent [1][2].", []),
    ],
)
def test_citation_forms(text: str, allowed: set[int], kept: str, dropped: list[int]) -> None:
    assert citations.keep_only(text, allowed) == (kept, dropped)


# -- malformed replies never crash ------------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize(
    "fields",
    [
        {"details": [{"text": "Limits [1].", "citations": 3, "confidence": 0.9}]},
        {"details": [{"text": "Limits.", "citations": ["²", "1"], "confidence": 0.9}]},
        {"details": [{"text": "Limits.", "citations": "12", "confidence": 0.9}]},
        {"details": [{"text": "Limits.", "citations": [2.0, 99.0, 1.5], "confidence": "nan"}]},
        {"details": ["A bare claim [1].", "Another [2; 98]."]},
        {"caveats": "Only partial."},
        {"why_cited": [{"source": "²", "why": "x"}, "nonsense", {"source": 1}]},
        {"details": [{"text": "Range [1-3] and [Source 77].", "citations": [], "confidence": True}]},
    ],
)
def test_malformed_replies_give_a_checked_answer(sample_db: Path, fields: dict[str, Any]) -> None:
    with serving(reply_with(**fields)) as server:
        result = ask(sample_db, QUESTION, "--json", env=with_server(server))
    assert result.exit_code == 0, result.output
    answer = json.loads(result.stdout)["answer"]
    assert answer["method"] == "claude"
    assert_citations_resolve(answer)
    assert all(0 <= d["confidence"] <= 1 for d in answer["details"])
    if fields.get("caveats") == "Only partial.":
        # a string where a list belongs is one caveat, after memdex's own
        assert answer["caveat_list"][-1] == "Only partial." and answer["caveats"].endswith("Only partial.")


@pytest.mark.parametrize(
    "data",
    [
        {"summary": "x", "details": "not a list", "caveats": []},
        {"summary": 5, "details": [], "caveats": []},
        {"summary": "x", "details": [42], "caveats": []},
        {"summary": "x", "details": [{"citations": [1]}], "caveats": []},
    ],
)
def test_a_reply_that_is_not_an_answer_falls_back_to_extractive(
    sample_db: Path, data: dict[str, Any]
) -> None:
    with serving(lambda body: api.tool_use(body, "answer", data)) as server:
        out = ask_json(sample_db, QUESTION, env=with_server(server))
    assert out["answer"]["method"] == "extractive"
    assert "was not an answer" in out["answer"]["reason"]
    assert_citations_resolve(out["answer"])


def test_unknown_citations_in_any_form_are_dropped_and_named(sample_db: Path) -> None:
    fields = {
        "summary": "See [Source 41] and [1].",
        "details": [{"text": "Limits hit the job [1-2; 77].", "citations": [1], "confidence": 0.8}],
    }
    with serving(reply_with(**fields)) as server:
        answer = ask_json(sample_db, QUESTION, env=with_server(server))["answer"]
    assert (
        answer["summary"] == "See and [1]."
        or answer["summary"] == "See [1]."
        or "[41]" not in answer["summary"]
    )
    assert answer["details"][0]["text"] == "Limits hit the job [1, 2]."
    assert answer["details"][0]["citations"] == [1, 2]
    dropped = [c for c in answer["caveat_list"] if c.startswith("Dropped citation")]
    assert any("[41] (the summary)" in c for c in dropped) and any("[77] (detail 1)" in c for c in dropped)
    assert_citations_resolve(answer)


# -- timelines ---------------------------------------------------------------------------------------------
def test_claude_details_are_put_in_date_order_whatever_order_it_wrote(sample_db: Path) -> None:
    def newest_first(body: dict[str, Any]) -> api.Reply:
        numbers = [n for n, _ in api.sources_in(body)]
        details = [{"text": f"Item [{n}].", "citations": [n], "confidence": 0.8} for n in reversed(numbers)]
        details.append({"text": "No source at all.", "citations": [], "confidence": 0.9})
        return api.tool_use(body, "answer", {"summary": "s", "details": details, "caveats": []})

    with serving(newest_first) as server:
        answer = ask_json(sample_db, "timeline of our ChatGPT problems", env=with_server(server))["answer"]
    dates = {s["n"]: s["date"] or "9999" for s in answer["sources"]}
    firsts = [min((dates[c] for c in d["citations"]), default="9999") for d in answer["details"]]
    assert firsts == sorted(firsts) and len(firsts) >= 3
    # the caveat names the uncited claim by its number after sorting
    uncited = next(i for i, d in enumerate(answer["details"], 1) if not d["citations"])
    assert f"Detail {uncited} cites no source: treat it as unsupported." in answer["caveat_list"]


def test_timeline_questions_are_answers_in_auto_mode(sample_db: Path) -> None:
    out = CliRunner().invoke(
        cli, ["--db", str(sample_db), "search", "timeline of ChatGPT problems", "--mode", "auto", "--json"]
    )
    assert json.loads(out.stdout)["mode"] == "answer"


# -- refinement ------------------------------------------------------------------------------------------------
def _hits(ids: list[int]) -> SearchResult:
    hits = [
        Hit(
            i,
            "k",
            "/p",
            "t",
            "note",
            None,
            None,
            [],
            None,
            1.0,
            0.5,
            3,
            {"summary": ""},
            "",
            None,
            None,
            1,
            1,
        )
        for i in ids
    ]
    return SearchResult("q", ["q"], "doc", len(hits), hits, [], {})


def test_refinement_stops_on_overlap_with_the_previous_round() -> None:
    first = Round(1, "q", _hits(list(range(1, 31))))
    second = Round(2, "q x", _hits([*range(1, 29), 31, 32]), new=[31, 32], overlap=28 / 30)
    assert _stop_reason([first, second], limit=30) == "round 2 overlapped the previous round by 93%"
    few_new = Round(2, "q x", _hits([*range(1, 30), 31]), new=[31], overlap=29 / 30)
    assert _stop_reason([first, few_new], limit=30) == "round 2 brought 1 new result"
    fresh = Round(2, "q x", _hits(list(range(31, 61))), new=list(range(31, 61)), overlap=0.0)
    assert _stop_reason([first, fresh], limit=30) is None


def test_refinement_stops_when_no_critical_gap_is_left_or_every_area_was_searched() -> None:
    open_gaps = {"critical": ["terms_not_found"], "missing_areas": []}
    first = Round(1, "q", _hits([1]), gaps={"critical": [], "missing_areas": []})
    assert _stop_reason([first], limit=30) == "no critical gap left"
    first.gaps = {"critical": [], "missing_areas": ["ci"]}  # an area still to search
    assert _stop_reason([first], limit=30) is None
    second = Round(2, "q x", _hits([2, 3]), new=[2, 3], gaps=open_gaps)
    assert _stop_reason([first, second], 30, {"ci"}, ["all", "ci"]) == "every suggested namespace searched"
    assert _stop_reason([first, second], 30, {"ci", "git"}, ["all", "ci"]) is None


def test_proposed_month_words_do_not_become_date_filters(sample_db: Path) -> None:
    def propose_november(body: dict[str, Any]) -> api.Reply:
        return api.tool_use(body, "next_search", {"terms": ["November", "2025", "truncation"]})

    question = "What problems have we had with the context window in chats?"
    with serving(propose_november) as server:
        out = ask_json(sample_db, question, "--llm-refine", env=with_server(server))
    rounds = out["refinement"]["rounds"]
    assert len(rounds) >= 2 and rounds[1]["proposed_by"] == "claude"
    assert rounds[1]["query"].startswith("truncation ")
    assert "November" not in rounds[1]["query"] and "2025" not in rounds[1]["query"]
    assert "months" not in out["filters"] and "years" not in out["filters"]


@pytest.mark.slow
def test_a_failing_api_is_not_asked_again_in_the_same_run(serena_db: Path) -> None:
    question = "how do we tell whether a fleet agent's worktree is still being used or was left behind?"
    overloaded = api.error(529, "overloaded_error", "Overloaded")
    with serving(*[overloaded] * 20) as server:
        out = ask_json(serena_db, question, "--llm-refine", env=with_server(server))
    assert len(server.requests) == 3  # one call, retried twice; then no more
    assert out["answer"]["method"] == "extractive" and "overloaded" in out["answer"]["reason"]
    assert "Claude could not propose terms" in out["refinement"]["rounds"][1]["note"]


def test_a_long_question_keeps_its_refinement_words(serena_db: Path) -> None:
    question = " ".join(["worktree"] + [f"word{i}" for i in range(40)]) + "?"
    out = CliRunner().invoke(cli, ["--db", str(serena_db), "search", question, "--rounds", "2", "--json"])
    rounds = json.loads(out.stdout)["refinement"]["rounds"]
    assert len(rounds) == 2 and len(rounds[0]["terms"]) == 32  # the question alone fills the term limit
    added = rounds[1]["query"][: -len(question)].split()
    assert added and set(added) <= set(rounds[1]["terms"])  # yet the added words are searched


# -- questions with nothing to search for -----------------------------------------------------------------------
def test_a_question_of_stopwords_only_says_there_is_nothing_to_search_for(sample_db: Path) -> None:
    result = ask(sample_db, "why?")
    assert result.exit_code == 1 and "has no words to search for" in result.stderr


def test_raw_is_for_search_mode(sample_db: Path) -> None:
    result = ask(sample_db, "chatgpt", "--raw")
    assert result.exit_code == 2 and "--raw is for search mode" in result.stderr


def test_full_text_reaches_every_mode(sample_db: Path) -> None:
    def run(*args: str) -> dict[str, Any]:
        out = CliRunner().invoke(
            cli, ["--db", str(sample_db), *args, "--full", "--json"], catch_exceptions=False
        )
        return json.loads(out.stdout)

    assert run("search", "sql index", "--rounds", "2")["results"][0]["text"]
    sources = run("ask", QUESTION)["answer"]["sources"]
    assert all(p["text"] for s in sources for p in s["passages"])


# -- results files --------------------------------------------------------------------------------------------------
def test_two_results_files_in_the_same_second_both_survive(sample_db: Path, tmp_path: Path) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    for _ in range(3):
        assert ask(sample_db, QUESTION, "--output-file", str(folder)).exit_code == 0
    assert len(list(folder.iterdir())) == 3


def test_results_file_header_and_mode(sample_db: Path, tmp_path: Path) -> None:
    path = tmp_path / "a.md"
    previous = os.umask(0o022)
    try:
        assert ask(sample_db, "ChatGPT --> limits?", "--output-file", str(path)).exit_code == 0
    finally:
        os.umask(previous)
    first = path.read_text().splitlines()[0]
    assert first.startswith("<!-- memdex ") and first.endswith(" -->") and first.count("-->") == 1
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


@pytest.mark.parametrize("where", ["through-a-file", "in-a-root"])
def test_results_file_errors_are_clear_and_keep_the_answer(
    sample_db: Path, sample_copy: Path, tmp_path: Path, where: str
) -> None:
    (tmp_path / "x.md").write_text("a file\n")
    target = (
        str(tmp_path / "x.md" / "y.md") if where == "through-a-file" else str(sample_copy / "notes" / "a.md")
    )
    result = ask(sample_db, QUESTION, "--output-file", target)
    assert result.exit_code == 2
    assert "## Summary" in result.stdout  # printed before the error
    message = "x.md is not a folder" if where == "through-a-file" else "inside an indexed root"
    assert message in result.stderr and "Traceback" not in result.output


def test_retrieve_never_overwrites_an_indexed_file_root(tmp_path: Path, db_path: Path) -> None:
    folder = tmp_path / "fr"
    folder.mkdir()
    (folder / "a.md").write_text("# Zebras\n\nzebras have stripes\n")
    (folder / "01-a.md").write_text("# Keep me\n\nzebras stripes, indexed on its own\n")
    from memdex.store import db

    conn = db.connect(db_path)
    index_paths(conn, [folder / "a.md", folder / "01-a.md"])
    conn.close()
    before = (folder / "01-a.md").read_bytes()
    result = CliRunner().invoke(
        cli, ["--db", str(db_path), "search", "zebras stripes", "--retrieve", str(folder), "--json"]
    )
    assert (folder / "01-a.md").read_bytes() == before
    if result.exit_code == 0:
        manifest = json.loads(result.stdout)["retrieved"]
        assert any("is an indexed file" in s["reason"] for s in manifest["skipped"])
    else:
        assert "indexed" in result.stderr


def test_copies_keep_their_source_mode(sample_db: Path, sample_copy: Path, tmp_path: Path) -> None:
    note = sample_copy / "notes" / "chatgpt-prompting-tips.md"
    note.chmod(0o640)
    out = CliRunner().invoke(
        cli,
        ["--db", str(sample_db), "search", "prompting tips", "--retrieve", str(tmp_path / "r"), "--json"],
    )
    files = json.loads(out.stdout)["retrieved"]["files"]
    copy = next(f for f in files if f["source"] == str(note))
    assert stat.S_IMODE((tmp_path / "r" / copy["file"]).stat().st_mode) == 0o640
    assert re.fullmatch(r"\d\d-chatgpt-prompting-tips\.md", copy["file"])
