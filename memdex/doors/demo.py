"""``memdex demo``: index the sample corpus shipped in the package; show searches and an answer."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from importlib import resources
from pathlib import Path

from memdex.answer.engine import answer
from memdex.doors.render import answer_text, index_text, results_text
from memdex.ingest.pipeline import index_paths
from memdex.query.cascade import search
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


def run_demo(echo: Callable[[str], None], keep: Path | None = None) -> None:
    corpus = resources.files("memdex").joinpath("sample-corpus")
    with resources.as_file(corpus) as base, tempfile.TemporaryDirectory() as tmp:
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
        echo('\nNext: memdex index ~/your/memories && memdex search "your question"')
        if keep:
            echo(f'The demo index is kept at {keep}: memdex --db {keep} search "..."')
