"""``memdex demo``: index the sample corpus shipped in the package; show searches and an answer."""

from __future__ import annotations

import os
import shlex
import shutil
import sys
import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from memdex.answer.synthesis import answer
from memdex.doors.render import answer_text, index_text, results_text
from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db

SEARCHES = [
    ("deploy key rotation", "a procedure, found by its title and tags (layer 1)"),
    ("Chatty", "notes and chats about ChatGPT, reached through the synonym table (layer 2)"),
    ("429 rate limit", "a chat archive: the conversation where it was solved"),
    ("what did we decide about the database?", "a question: stopwords dropped, decisions first"),
    ("stale worktree folders", "a Serena memory found through its index keywords"),
    ("outage in October", "a month word becomes a date filter"),
    ("October", "dates alone list what is dated then, newest first, with its themes"),
]
QUESTION = "What problems have we had with Chatty?"


def sample_roots(base: Path) -> list[Path]:
    return [base / "memories", base / "serena", base / "notes", base / "chats"]


def invoked_as(argv0: str | None = None) -> str:
    """How to run this memdex again from the same shell: ``memdex`` when that name on the PATH
    is this program, else the path it was started by (``.venv/bin/memdex`` before the venv is
    activated), else ``python -m memdex`` with this interpreter."""
    argv0 = sys.argv[0] if argv0 is None else argv0
    if Path(argv0).name != "memdex":  # python -m memdex, or a test runner
        python, on_path = sys.executable, shutil.which("python")
        if on_path and Path(on_path).resolve() == Path(python).resolve():
            python = "python"
        elif Path(python).is_relative_to(Path.cwd()):
            python = os.path.relpath(python)
        return f"{shlex.quote(python)} -m memdex"
    found = shutil.which("memdex")
    if found and Path(found).resolve() == Path(argv0).resolve():
        return "memdex"
    return shlex.quote(argv0)


def next_steps(program: str) -> list[str]:
    "The demo's closing lines: what to run next, written so that it runs as printed."
    lines = [f'Next: {program} index ~/your/memories && {program} search "your question"']
    script = Path(shlex.split(program)[0])
    activate = script.parent / "activate"  # a venv's memdex, not on the PATH until activated
    if program != "memdex" and script.name == "memdex" and activate.is_file():
        lines.append(f"(or run `source {shlex.quote(str(activate))}` first, and then type `memdex` alone)")
    return lines


def run_demo(
    echo: Callable[[str], None],
    keep: Path | None = None,
    corpus: Path | None = None,
    program: str | None = None,
) -> None:
    """Index the sample corpus (``corpus``: a copy of it, for tests) and print searches and an
    answer; ``program`` is how the closing hint runs memdex (default: as it was run now)."""
    program = program or invoked_as()
    shipped = resources.files("memdex").joinpath("sample-corpus")
    with resources.as_file(shipped) as packaged, tempfile.TemporaryDirectory() as tmp:
        base = corpus or packaged
        path = keep or Path(tmp) / "memdex.db"
        conn = db.connect(path)
        roots = sample_roots(base)
        echo(f"memdex demo: indexing the sample corpus in {base} into {path}\n")
        echo("$ memdex index " + " ".join(str(r.relative_to(base.parent)) for r in roots))
        report = index_paths(conn, roots)
        echo(index_text(report.to_dict()))
        for query, what in SEARCHES:
            echo(f"\n$ memdex search {query!r} --limit 3      # {what}")
            echo(results_text(search(conn, query, limit=3)))
        echo(f"\n$ memdex ask {QUESTION!r} --limit 5 --no-llm      # an answer with citations")
        echo(answer_text(answer(conn, QUESTION, limit=5, use_llm=False)))
        conn.close()
        echo("")
        for line in next_steps(program):
            echo(line)
        if keep:
            echo(f'The demo index is kept at {keep}: {program} --db {keep} search "..."')
