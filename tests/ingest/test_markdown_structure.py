"""Headings and fences by CommonMark (issue 13): a fence holding the other fence character
no longer hides the headings after it, in chunks, titles, keyword weights and answers.

Each case is checked twice: through the helper, and through a real file indexed into a
real database, whose chunk line numbers count the frontmatter.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memdex.answer.extractive import sentences
from memdex.ingest.pipeline import index_paths
from memdex.ingest.structure import Heading, Structure, _plain_headings, parsed_structure, structure_of
from memdex.serena.keywords import terms_of

FRONTMATTER = "---\ntags: [fences]\n---\n"  # three lines: the body's line 0 is the file's line 4


def body(*lines: str) -> str:
    return "\n".join(lines) + "\n"


# (body, headings as (level, text, 0-based line), fences as (first, last + 1),
#  chunks as (heading path, first file line, last file line))
CASES = {
    "backtick fence holding a tilde line": (
        body("# Top", "", "Intro.", "", "```text", "~~~", "not the end", "```", "", "## Second", "", "Two.", "",
             "## Third", "", "Three."),
        [(1, "Top", 0), (2, "Second", 9), (2, "Third", 13)],
        [(4, 8)],
        [("Top", 4, 11), ("Top > Second", 13, 15), ("Top > Third", 17, 19)],
    ),
    "tilde fence holding a backtick fence": (
        body("# Top", "Intro.", "~~~markdown", "```bash", "echo hi", "~~~", "## After", "Text."),
        [(1, "Top", 0), (2, "After", 6)],
        [(2, 6)],
        [("Top", 4, 9), ("Top > After", 10, 11)],
    ),
    "a # line inside a fence": (
        body("# Top", "Intro.", "```bash", "# install it", "pip install memdex", "```", "## Next", "Text."),
        [(1, "Top", 0), (2, "Next", 6)],
        [(2, 6)],
        [("Top", 4, 9), ("Top > Next", 10, 11)],
    ),
    "an unclosed fence runs to the end": (
        body("# Top", "Intro.", "```python", "# comment", "## not a heading either", "", "x = 1"),
        [(1, "Top", 0)],
        [(2, 7)],
        [("Top", 4, 10)],
    ),
    # Setext headings were never headings here, and stay so: in notes a paragraph followed by
    # a --- rule would otherwise turn into a heading.
    "a setext heading is not a section": (
        body("# Top", "Intro.", "", "Subtitle", "--------", "Text."),
        [(1, "Top", 0)],
        [],
        [("Top", 4, 9)],
    ),
    # New with CommonMark: up to three spaces may stand before the #.
    "an indented heading": (
        body("# Top", "Intro.", "   ## Part", "Text."),
        [(1, "Top", 0), (2, "Part", 2)],
        [],
        [("Top", 4, 5), ("Top > Part", 6, 7)],
    ),
}  # fmt: skip


@pytest.mark.parametrize(("text", "headings", "fences"), [c[:3] for c in CASES.values()], ids=list(CASES))
def test_structure_of(text: str, headings: list[tuple[int, str, int]], fences: list[tuple[int, int]]) -> None:
    shape = structure_of(text)
    assert shape.headings == tuple(Heading(*h) for h in headings)
    assert [(r.start, r.stop) for r in shape.fences] == fences
    assert shape.fenced == {line for start, stop in fences for line in range(start, stop)}


@pytest.mark.parametrize(("text", "chunks"), [(c[0], c[3]) for c in CASES.values()], ids=list(CASES))
def test_indexed_chunks_follow_the_fences(
    conn: sqlite3.Connection, tmp_path: Path, text: str, chunks: list[tuple[str, int, int]]
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "fences.md").write_text(FRONTMATTER + text)
    assert index_paths(conn, [folder]).added == 1
    title, *_ = conn.execute("SELECT title FROM documents").fetchone()
    rows = conn.execute("SELECT heading, line_start, line_end FROM chunks ORDER BY seq").fetchall()
    assert title == "Top"
    assert [tuple(r) for r in rows] == chunks


def test_a_fence_in_a_list_item_hides_its_headings() -> None:
    shape = structure_of(body("- step one:", "", "  ```bash", "  # not a heading", "  ```", "# After"))
    assert shape.headings == (Heading(1, "After", 5),)
    assert shape.fences == (range(2, 5),)


def test_lines_end_at_newlines_only() -> None:
    # markdown-it would also end a line at a lone CR; the chunk line numbers would drift.
    shape = structure_of("# A\rstill line one\r\n\n## B\n")
    assert shape.headings == (Heading(1, "A still line one", 0), Heading(2, "B", 2))


def test_keyword_weights_skip_headings_inside_fences() -> None:
    text = body("# Deploy notes", "", "```text", "~~~", "## Zebrafence inside", "```", "", "## Quokka after")
    counts = terms_of(text)
    assert "Zebrafence" not in counts
    assert counts["Quokka"] == 2.0  # a heading's weight, no longer hidden as code


def test_extractive_sentences_skip_fenced_code_and_keep_the_prose_after() -> None:
    passage = body(
        "The runbook starts with one command.",
        "",
        "```text",
        "~~~",
        "# Heading inside the fence",
        "This comment only looks like a sentence.",
        "```",
        "",
        "The runbook lives in the ops folder today.",
    )
    assert sentences(passage) == [
        "The runbook starts with one command.",
        "The runbook lives in the ops folder today.",
    ]


def test_an_index_read_by_the_old_scanner_is_read_again(conn: sqlite3.Connection, tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "fences.md").write_text(FRONTMATTER + CASES["backtick fence holding a tilde line"][0])
    index_paths(conn, [folder])
    conn.execute("UPDATE roots SET ingest_version = 2")  # as an index written before issue 13 was fixed
    conn.commit()
    assert index_paths(conn, [folder]).updated == 1


# -- the plain reading: a text with no fence or HTML block is read without markdown-it ----------
# Pieces that make or break headings, lists, quotes, code and HTML, and whitespace that
# markdown-it and str.strip tell apart.
PIECES = ["#", "##", "###", "####### ", "# ", " ", "   ", "\t", "\n", "\n\n", "- ", "* ", "1. ", "> ",
          "word", "Title", "*em*", "`", "~", "<", "<div>", "<!--", "-->", "=", "---", "\\", "\x0b",
          "\xa0", "\x1c", "\x85", "\u2028", "\x00", "\r", "    code"]  # fmt: skip


@pytest.mark.slow
@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_the_plain_reading_is_markdown_its(pieces: list[str]) -> None:
    text = "".join(pieces)
    source = text.replace("\r\n", "\n").replace("\r", " ")
    plain = _plain_headings(source)
    if plain is not None:
        assert Structure(plain, (), frozenset()) == parsed_structure(source)


@pytest.mark.slow
def test_the_plain_reading_agrees_on_every_stored_note(shared_data: Path) -> None:
    "On the real notes in shared/ (Serena memories, mnemonic), wherever the plain reading applies."
    read = 0
    for path in sorted(shared_data.rglob("*.md")):
        source = path.read_text("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", " ")
        plain = _plain_headings(source)
        if plain is not None:
            read += 1
            assert Structure(plain, (), frozenset()) == parsed_structure(source), path
    assert read > 100


@pytest.mark.parametrize(
    ("text", "headings"),
    [
        ("# Title #\n## Part ##  \n", [(1, "Title", 0), (2, "Part", 1)]),
        ("# Title#\n#NoSpace\n####### seven\n", [(1, "Title#", 0)]),
        ("#\n# #\n##   \n\n### Last\n", [(3, "Last", 4)]),
        (
            "- item\n# After the list\n> quote\n# After the quote\n",
            [(1, "After the list", 1), (1, "After the quote", 3)],
        ),
    ],
)
def test_plain_headings(text: str, headings: list[tuple[int, str, int]]) -> None:
    assert _plain_headings(text) == tuple(Heading(*h) for h in headings)
    assert structure_of(text) == parsed_structure(text)


@pytest.mark.parametrize(
    "text", ["```\n# code\n```\n", "<div>\n# x\n</div>\n", "- a\n  # in the item\n", "# a\x00\n"]
)
def test_texts_that_need_markdown_it(text: str) -> None:
    assert _plain_headings(text) is None
