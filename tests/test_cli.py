"""The command line as users see it: output, JSON fields, exit codes and error messages."""

import json
import os
import shlex
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memdex.doors.cli import cli

from .conftest import search_in_a_new_process
from .test_terms import HOSTILE

RESULT_FIELDS = {
    # the spec's SearchResult
    "chat_id",
    "title",
    "platform",
    "date",
    "message_count",
    "chunk_count",
    "total_size_bytes",
    "estimated_tokens",
    "has_decisions",
    "has_discoveries",
    "has_procedures",
    "has_artifacts",
    "matching_chunks",
    "condensed_path",
    "match_layer",
    "relevance_score",
    "why_relevant",
    # memdex's own
    "id",
    "key",
    "path",
    "kind",
    "namespace",
    "type",
    "scope",
    "tags",
    "date_source",
    "score",
    "why",
    "snippet",
    "line_start",
    "line_end",
    "chunks",
    "location",
    "chat",
    "source_deleted",
    "resume",
}


def run(db_path: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db_path), *args], input=input, catch_exceptions=False)


@pytest.fixture
def indexed(db_path: Path, sample_copy: Path) -> Path:
    result = run(
        db_path,
        "index",
        str(sample_copy / "memories"),
        str(sample_copy / "serena"),
        str(sample_copy / "notes"),
    )
    assert result.exit_code == 0, result.output
    return db_path


def test_index_prints_a_summary(db_path: Path, sample_copy: Path) -> None:
    result = run(db_path, "index", str(sample_copy / "notes"))
    assert result.exit_code == 0
    assert result.stdout.splitlines()[1].startswith(
        "3 files: 3 added, 0 updated, 0 unchanged, 0 removed, 0 skipped"
    )
    again = run(db_path, "index")  # no PATH: every remembered root
    assert "3 unchanged" in again.stdout


def test_index_without_any_root_is_a_usage_error(db_path: Path) -> None:
    result = run(db_path, "index")
    assert result.exit_code == 2
    assert "Nothing to index yet: give a PATH" in result.stderr


def test_index_with_bad_files_exits_1_and_lists_them(db_path: Path, tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "good.md").write_text("# Good\n\nfine\n")
    (root / "empty.md").write_text("")
    (root / "bad.memory.md").write_text("---\ntags: [x\n---\n")  # a note's would be a warning
    result = run(db_path, "index", str(root))
    assert result.exit_code == 1
    assert "1 added" in result.stdout and "2 skipped" in result.stdout
    assert result.stderr.splitlines()[0] == "Skipped 2 files:"
    assert f"  {root / 'empty.md'}: empty file" in result.stderr.splitlines()
    status = run(db_path, "status")
    assert "Errors: 2" in status.stdout
    assert f"{root / 'bad.memory.md'}: broken YAML frontmatter at line 2" in status.stdout


def test_search_human_layout(indexed: Path) -> None:
    result = run(indexed, "search", "deploy key rotation", "--limit", "2")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[0].startswith("Found 4 results for 'deploy key rotation', showing 2 · layer 1 (topics)")
    assert lines[2] == " 1. Rotate the deploy keys"
    assert lines[3].startswith("    memory · procedures/project · 2025-10-30 · 7c5a1e93-")
    assert lines[5].startswith("    why: layer 1 (topics, all terms): deploy [topics, content]")
    assert lines[7].startswith("    read: ") and lines[7].endswith("rotate-deploy-keys.memory.md:14-21")


def test_search_json_fields(indexed: Path) -> None:
    result = run(indexed, "search", "Chatty", "--json")
    data = json.loads(result.stdout)
    assert data["found"] == 3 and data["showing"] == 3
    assert data["total_tokens"] == sum(r["estimated_tokens"] for r in data["results"])
    for r in data["results"]:
        assert set(r) == RESULT_FIELDS
        assert r["match_layer"] == 2
        assert r["why_relevant"] == r["why"]["summary"] and "chatgpt (synonym of chatty)" in r["why_relevant"]
        assert r["why"]["synonyms"][0] == {
            "term": "chatty",
            "synonym": "chatgpt",
            "fields": ["topics", "content"],
        }


def test_granularity_chat_is_the_default_and_doc_its_old_name(indexed: Path) -> None:
    runs = [run(indexed, "search", "deploy", "--json", *g) for g in ([], ["--granularity", "doc"])]
    default, doc = (json.loads(r.stdout) for r in runs)
    assert default["granularity"] == doc["granularity"] == "chat"
    assert [r["id"] for r in default["results"]] == [r["id"] for r in doc["results"]]
    assert all(isinstance(n, int) for r in default["results"] for n in r["matching_chunks"])


def test_search_chunk_json_carries_text_with_full(indexed: Path) -> None:
    data = json.loads(run(indexed, "search", "rerere", "--granularity", "chunk", "--full", "--json").stdout)
    first = data["results"][0]
    assert "rerere" in first["text"] and first["heading"] and first["chunk_id"]


def test_search_sql_runs_in_sqlite3(indexed: Path) -> None:
    result = run(indexed, "search", "worktree cleanup", "--sql")
    assert result.exit_code == 0
    statements = [block.split("\n", 1)[1] for block in result.stdout.strip().split("\n\n")]
    assert len(statements) >= 1
    conn = sqlite3.connect(indexed)
    first = conn.execute(statements[0].rstrip(";")).fetchall()
    assert first, "layer 1 finds the worktree memory"
    if shutil.which("sqlite3"):
        out = subprocess.run(
            ["sqlite3", str(indexed)], input=statements[0], capture_output=True, text=True, check=True
        )
        assert out.stdout.strip().splitlines()[0].split("|")[0] == str(first[0][0])


def test_a_words_search_loads_nothing_it_does_not_use(indexed: Path) -> None:
    """A search of an index without vectors: no model code, no logging, no importlib.resources
    (its tempfile, shutil and zipfile), and answer mode's patterns left uncompiled."""
    shown, (modules, compiled) = search_in_a_new_process(
        indexed,
        "deploy key rotation",
        "from memdex.answer import modes",
        "loaded = ('memdex.query.meaning.model', 'logging', 'importlib.resources', 'numpy')",
        "print(sorted(m for m in loaded if m in sys.modules))",
        "print(any(p.pattern == modes._QUESTION_START for p in re._cache.values()))",
    )
    assert shown["results"]
    assert modules == "[]"
    assert compiled == "False"


def test_search_without_an_index(tmp_path: Path) -> None:
    result = run(tmp_path / "none.db", "search", "x")
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: No memdex index at {tmp_path / 'none.db'}. Run `memdex index PATH` first, "
        "or point --db (or $MEMDEX_DB) at an existing index.\n"
    )
    assert not (tmp_path / "none.db").exists()


@pytest.mark.parametrize("text", HOSTILE)
def test_hostile_queries_exit_0(indexed: Path, text: str) -> None:
    result = run(indexed, "search", "--json", "--", text)  # `--`: a query may start with "-"
    assert result.exit_code == 0
    assert json.loads(result.stdout)["query"] == text


def test_raw_syntax_error_is_a_message(indexed: Path) -> None:
    result = run(indexed, "search", '"unbalanced', "--raw")
    assert result.exit_code == 1
    assert result.stderr.startswith("Error: Invalid FTS5 query '\"unbalanced': ")
    assert "Traceback" not in result.output


def test_bad_date_exits_2(indexed: Path) -> None:
    result = run(indexed, "search", "x", "--since", "yesterday")
    assert result.exit_code == 2
    assert "--since 'yesterday' is not a date" in result.stderr


@pytest.mark.parametrize(
    ("option", "value", "problem"),
    [
        ("--since", "2026-13", "there is no month 13"),
        ("--since", "2026-02-30", "February 2026 has 28 days"),
        ("--until", "2025-04-31", "April 2025 has 30 days"),
    ],
)
def test_a_date_that_is_not_in_the_calendar_exits_2(
    indexed: Path, option: str, value: str, problem: str
) -> None:
    "Previously 2026-13 and 2026-02-30 were accepted and compared as text (#26)."
    result = run(indexed, "search", "rerere", option, value)
    assert result.exit_code == 2
    assert result.stderr == f"Error: {option} '{value}' is not a real date: {problem}.\n"
    assert run(indexed, "search", "rerere", "--since", "2024-02-29").exit_code == 0  # a leap day is one


def test_a_mistyped_query_says_what_it_searched_instead(indexed: Path) -> None:
    "Previously `rebsae conflcit` found 0 and said nothing (#26)."
    lines = run(indexed, "search", "rebsae conflcit").stdout.splitlines()
    # said first, then counted as what was searched (#35)
    assert lines[0] == (
        "Showing results for 'rebase conflict' instead of 'rebsae conflcit' (nothing matched the words as typed)"
    )
    assert lines[1].startswith("Found 1 result for 'rebase conflict', showing 1 · layer 1 (topics)")
    assert lines[3] == " 1. Git: Rebase Conflicts"
    typed = run(indexed, "search", "rebsae conflict").stdout.splitlines()
    assert typed[1] == "Note: did you mean: rebase conflict?"
    fixed = json.loads(run(indexed, "search", "rebsae conflict", "--fix-typos", "--json").stdout)
    assert fixed["query"] == "rebsae conflict" and fixed["terms"] == ["rebase", "conflict"]
    assert fixed["typos"]["searched_instead"] is True and fixed["typos"]["why"] == "--fix-typos"
    batch = [{"id": 1, "query": "rebsae conflict"}, {"id": 2, "query": "rebsae conflict", "fix_typos": True}]
    out = run(indexed, "search", "--batch", "-", input="\n".join(json.dumps(b) for b in batch))
    plain, asked = (json.loads(line) for line in out.stdout.splitlines())
    assert plain["typos"]["searched_instead"] is False
    assert asked["typos"]["searched_instead"] is True
    assert asked["results"][0]["title"] == "Git: Rebase Conflicts"


def test_a_budget_too_small_for_the_first_result_is_not_nothing_matched(indexed: Path) -> None:
    "Previously: 'Found 28+ … showing 0 … Nothing matched' (#26)."
    out = run(indexed, "search", "rebase conflict", "--max-tokens", "10").stdout
    assert "Nothing matched" not in out
    assert out.rstrip().endswith("Nothing shown: the first result alone is over the --max-tokens budget.")
    assert "Note: the first result needs ~" in out and "raise --max-tokens to " in out


def test_a_long_query_is_shortened_in_the_header_only(indexed: Path) -> None:
    "Previously a 10 KB query was echoed whole in the first line (#26)."
    query = "rerere " + "x" * 10_000
    head = run(indexed, "search", query).stdout.splitlines()[0]
    assert head.startswith(f"Found 1 result for '{query[:80]}…', showing 1") and len(head) < 200
    assert json.loads(run(indexed, "search", query, "--json").stdout)["query"] == query


def test_counts_agree_with_their_nouns(db_path: Path, sample_copy: Path, tmp_path: Path) -> None:
    "Previously 'chatgpt chat · 4 messages, 1 chunks' (#26)."
    assert run(db_path, "index", str(sample_copy / "chats")).exit_code == 0
    out = run(db_path, "search", "chatgpt", "--limit", "20").stdout
    assert "4 messages, 1 chunk\n" in out and "2 chunks" in out
    assert " 1 chunks" not in out
    alone = tmp_path / "one"
    alone.mkdir()
    (alone / "only.md").write_text("# Only\n\nA single note.\n")
    indexed = run(tmp_path / "one.db", "index", str(alone)).stdout
    assert "1 file: 1 added" in indexed and "1 document written" in indexed
    status = run(tmp_path / "one.db", "status").stdout
    assert "1 document, 1 chunk, " in status and ", 1 file, 1 document, indexed" in status


def test_batch(indexed: Path) -> None:
    lines = "\n".join(
        [
            json.dumps({"id": "a", "query": "rerere", "limit": 1}),
            json.dumps({"id": "b", "query": "deploy", "kind": "memory", "granularity": "chunk"}),
            json.dumps({"id": "c", "query": "x", "colour": "red"}),
            "not json",
            "",
        ]
    )
    result = run(indexed, "search", "--batch", "-", input=lines)
    assert result.exit_code == 0
    out = [json.loads(line) for line in result.stdout.splitlines()]
    assert [o["id"] for o in out] == ["a", "b", "c", None]
    assert [r["title"] for r in out[0]["results"]] == ["Git: Rebase Conflicts"]
    assert {r["kind"] for r in out[1]["results"]} == {"memory"}
    assert out[2]["error"].startswith("unknown option 'colour'; known options: id, query, ")
    assert out[3] == {"id": None, "line": 4, "error": "line 4 is not JSON: Expecting value"}


def test_status_json(indexed: Path) -> None:
    data = json.loads(run(indexed, "status", "--json").stdout)
    assert data["counts"]["documents"] == 12
    assert {k["kind"]: k["documents"] for k in data["kinds"]} == {"memory": 5, "serena": 4, "note": 3}
    assert data["database"]["fts_tables"] == {"documents": "documents_fts", "chunks": "chunks_fts"}
    assert sorted(r["detected_kind"] for r in data["roots"]) == ["files", "files", "serena"]


def test_synonyms_commands(db_path: Path, tmp_path: Path) -> None:
    assert run(db_path, "synonyms", "add", "k8s", "kubernetes", "kube").stdout == "Added 2 synonyms to k8s.\n"
    listed = run(db_path, "synonyms", "list").stdout.splitlines()
    assert "k8s: kubernetes, kube" in listed and "chatgpt: chatty, gpt" in listed
    saved = tmp_path / "syn.txt"
    saved.write_text("\n".join(listed))
    assert run(db_path, "synonyms", "import", str(saved)).stdout == f"Imported 0 new synonyms from {saved}.\n"
    assert run(db_path, "synonyms", "remove", "k8s", "kube").stdout == "Removed 1 synonym.\n"
    missing = run(db_path, "synonyms", "remove", "nothing")
    assert missing.exit_code == 1 and missing.stderr == "Error: No synonyms of 'nothing' to remove.\n"


def test_demo_runs_on_the_shipped_sample() -> None:
    result = CliRunner().invoke(cli, ["demo"], catch_exceptions=False)
    assert result.exit_code == 0
    assert "19 documents written" in result.stdout
    assert "why: layer 2 (topics+synonyms, all terms): chatgpt (synonym of chatty)" in result.stdout
    assert "Filters: months=[10]" in result.stdout
    assert "$ memdex search 'October' --limit 3" in result.stdout
    assert "Themes: chatgpt 3 (platform)" in result.stdout  # issue 17: a month alone lists it


@pytest.mark.slow
def test_demo_ends_with_commands_that_run_as_printed(tmp_path: Path) -> None:
    "Previously it ended `Next: memdex index …`, a command a venv not yet activated does not have (#26)."
    script = Path(sys.executable).parent / "memdex"  # the venv's console script, as pip installed it
    if not script.exists():
        pytest.skip("memdex is not installed as a console script beside this python")
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # the venv not activated
    out = subprocess.run([str(script), "demo"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert out.returncode == 0, out.stderr
    hint = [line for line in out.stdout.splitlines() if line.startswith("Next: ")]
    assert hint == [f'Next: {script} index ~/your/memories && {script} search "your question"']
    assert f"(or run `source {script.parent / 'activate'}` first, and then type `memdex` alone)" in out.stdout
    notes = tmp_path / "memories"
    notes.mkdir()
    (notes / "n.md").write_text("# Deploy keys\n\nRotate them every 90 days.\n")
    for command in hint[0].removeprefix("Next: ").split(" && "):  # as printed, with a real folder
        argv = shlex.split(command.replace("~/your/memories", str(notes)).replace("your question", "deploy"))
        ran = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=tmp_path)
        assert ran.returncode == 0, (command, ran.stderr)
    assert "Deploy keys" in ran.stdout


def test_demo_hint_is_plain_memdex_when_the_path_finds_this_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from memdex.doors.demo import invoked_as, next_steps

    script = Path(sys.executable).parent / "memdex"
    if not script.exists():
        pytest.skip("memdex is not installed as a console script beside this python")
    monkeypatch.setenv("PATH", f"{script.parent}:/usr/bin:/bin")
    assert invoked_as(str(script)) == "memdex"
    assert next_steps("memdex") == ['Next: memdex index ~/your/memories && memdex search "your question"']
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    assert invoked_as(str(script)) == str(script)
    assert invoked_as("/somewhere/memdex/__main__.py").endswith(" -m memdex")


def test_kinds_lists_the_registry() -> None:
    out = CliRunner().invoke(cli, ["kinds"]).stdout
    # every description starts in one column: previously claude-code pushed its own out (#26);
    # an agent's default locations are listed under its description, in that column too (#28)
    starts = {
        len(line) - len(line.lstrip()) if line[0] == " " else len(line) - len(line.split(maxsplit=1)[1])
        for line in out.splitlines()
    }
    assert len(starts) == 1
    assert [line.split()[0] for line in out.splitlines() if not line.startswith(" ")] == [
        "serena",
        "archive",
        "memory",
        "aider",
        "note",
        "text",
        "chatgpt",
        "claude",
        "gemini-cli",
        "gemini",
        "copilot-cli",
        "opencode",
        "opencode-db",
        "claude-code",
        "codex",
    ]
    defaults = [line.split(maxsplit=1)[1] for line in out.splitlines() if line.startswith(" ")]
    assert [d.removesuffix(" (found)") for d in defaults] == [
        "~/.gemini/tmp",
        "~/.copilot/session-state",
        "~/.copilot/history-session-state",
        "$XDG_DATA_HOME/opencode/storage",  # conftest sets XDG_DATA_HOME
        "$XDG_DATA_HOME/opencode/opencode.db",  # a single file: OpenCode 1.2 and later
        "~/.claude/projects",
        "~/.codex/sessions",
    ]


def test_python_dash_m_and_version() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memdex", "--version"], capture_output=True, text=True, check=True
    )
    assert out.stdout.startswith("memdex, version ")


def test_undecodable_arguments_and_batch_lines(indexed: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "memdex", "--db", str(indexed), "search", "--raw", "--", b"gamma \xff"],
        capture_output=True,
    )
    assert out.returncode == 1 and out.stderr.startswith(b"Error: Invalid FTS5 query 'gamma ?'")
    assert b"Traceback" not in out.stderr
    batch = b'{"id": 1, "query": "g \xff"}\n{"id": 2, "query": "rerere"}\n'
    out = subprocess.run(
        [sys.executable, "-m", "memdex", "--db", str(indexed), "search", "--batch", "-"],
        input=batch,
        capture_output=True,
        check=True,
    )
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    assert lines[0] == {"id": None, "line": 1, "error": "line 1 is not valid UTF-8 (byte 22)"}
    assert lines[1]["id"] == 2 and lines[1]["results"][0]["title"] == "Git: Rebase Conflicts"


def test_an_index_in_a_read_only_folder_can_be_searched(indexed: Path, tmp_path: Path) -> None:
    "Run without root's DAC override (util-linux setpriv), so the folder really is read-only."
    folder = tmp_path / "media"
    folder.mkdir()
    copy = folder / "index.db"
    copy.write_bytes(indexed.read_bytes())
    copy.chmod(0o444)
    folder.chmod(0o555)
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    try:
        out = subprocess.run(
            [*prefix, sys.executable, "-m", "memdex", "--db", str(copy), "search", "rerere", "--json"],
            capture_output=True,
            text=True,
        )
    finally:
        folder.chmod(0o755)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["results"][0]["title"] == "Git: Rebase Conflicts"
