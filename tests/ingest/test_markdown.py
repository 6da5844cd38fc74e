import pytest

from memdex.errors import IngestError
from memdex.ingest.markdown import chunk_markdown, parse_markdown, split_frontmatter


def test_frontmatter_and_body_line() -> None:
    text = "---\ntitle: T\ntags: [a, b]\n---\n# Heading\n\nBody\n"
    meta, body, line = split_frontmatter(text)
    assert meta == {"title": "T", "tags": ["a", "b"]}
    assert body.startswith("# Heading")
    assert line == 5


@pytest.mark.parametrize(
    "text",
    ["---\nJust a note between two rules.\n---\nMore.\n", "---\n- a list\n- between rules\n---\nbody\n"],
)
def test_rules_around_prose_are_not_frontmatter(text: str) -> None:
    assert split_frontmatter(text) == ({}, text, 1)


def test_no_frontmatter() -> None:
    meta, body, line = split_frontmatter("# Title\n---\nnot frontmatter\n")
    assert meta == {} and line == 1 and body.startswith("# Title")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("---\ntitle: [unclosed\n---\nbody\n", r"broken YAML frontmatter at line \d+"),
        ("---\ntitle: x\nno closing line\n", "has no closing ---"),
        ("---\nkey: value\n  bad: indent\n---\n", "broken YAML frontmatter"),
    ],
)
def test_broken_frontmatter_is_an_ingest_error(text: str, message: str) -> None:
    with pytest.raises(IngestError, match=message):
        split_frontmatter(text)


def test_chunks_at_headings_with_file_line_numbers() -> None:
    body = "# Title\n\nIntro text.\n\n## First\n\nOne.\n\n## Second\n\nTwo.\n```\n# not a heading\n```\n"
    chunks = chunk_markdown(body, first_line=10, title="Title")
    assert [c.heading for c in chunks] == ["Title", "Title > First", "Title > Second"]
    assert [(c.line_start, c.line_end) for c in chunks] == [(10, 12), (14, 16), (18, 23)]
    assert "# not a heading" in chunks[2].text


def test_heading_without_text_joins_the_next_section() -> None:
    chunks = chunk_markdown("# Title\n## Part\nText.\n", first_line=1, title="Title")
    assert len(chunks) == 1
    assert chunks[0].text == "# Title\n## Part\nText."
    assert chunks[0].heading == "Title > Part"


def test_large_section_is_split_at_blank_lines_and_never_empty() -> None:
    paragraph = "word " * 150  # ~750 bytes
    body = "# Big\n\n" + "\n\n".join([paragraph] * 10)
    chunks = chunk_markdown(body, first_line=1, title="Big", max_tokens=400)
    assert len(chunks) > 3
    assert all(c.text.strip() for c in chunks)
    assert all(len(c.text.encode()) <= 400 * 4 for c in chunks)
    covered = sorted((c.line_start, c.line_end) for c in chunks)
    assert covered[0][0] == 1 and covered[-1][1] == body.count("\n") + 1


def test_title_falls_back_from_frontmatter_to_h1_to_file_name() -> None:
    def title(text: str) -> str:
        return parse_markdown(text, "dir/my-note.md", kind="note", size_bytes=len(text), key="k").title

    assert title("---\ntitle: From FM\n---\n# H1\n") == "From FM"
    assert title("intro\n# The **H1**\n") == "The H1"
    assert title("## Problem\ntext\n") == "my-note"


def test_nested_fields_and_dates() -> None:
    text = "---\nmetadata:\n  title: Nested\n  tags: [x]\n  created: 2025-03-04\n---\nBody\n"
    doc = parse_markdown(text, "a.md", kind="note", size_bytes=len(text), key="a")
    assert doc.title == "Nested"
    assert doc.tags == ["x"]
    assert doc.date == "2025-03-04"
    assert doc.meta["metadata"]["created"] == "2025-03-04"


def test_a_frontmatter_date_dates_the_note_after_modified_and_created() -> None:
    "`date:` is how Hugo, Jekyll and Obsidian date a page."
    doc = parse_markdown(
        "---\ndate: 2024-05-06\n---\n# T\n", "2025-01-01 x.md", kind="note", size_bytes=1, key="x"
    )
    assert (doc.date, doc.date_source) == ("2024-05-06", "frontmatter")
    text = "---\ndate: 2024-05-06\ncreated: 2023-01-02\n---\n# T\n"
    assert parse_markdown(text, "x.md", kind="note", size_bytes=1, key="x").date == "2023-01-02"


def test_date_from_body_then_file_name() -> None:
    doc = parse_markdown("# T\n\n**Date**: 2025-12-29\n", "x.md", kind="note", size_bytes=1, key="x")
    assert doc.date == "2025-12-29"
    doc = parse_markdown("# T\n", "audits/2026-08-17-review.md", kind="note", size_bytes=1, key="x")
    assert doc.date == "2026-08-17"


def test_frontmatter_only_file_is_still_findable() -> None:
    text = "---\ntitle: Only fields\ndescription: the summary\ntags: [t]\n---\n"
    doc = parse_markdown(text, "a.md", kind="note", size_bytes=len(text), key="a")
    assert len(doc.chunks) == 1
    assert "the summary" in doc.chunks[0].text


def test_one_giant_line_is_cut_into_bounded_chunks() -> None:
    body = "# Big\n\n" + "quokka " * 50_000 + "\nlast line\n"
    chunks = chunk_markdown(body, first_line=1, title="Big", max_tokens=200)
    assert all(len(c.text.encode()) <= 200 * 4 for c in chunks)
    assert sum(c.text.count("quokka") for c in chunks) == 50_000
    assert {(c.line_start, c.line_end) for c in chunks[1:-1]} == {(3, 3)}
    assert chunks[-1].line_end == 4


def test_yaml_alias_bombs_are_refused_quickly() -> None:
    import time

    levels = "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9))
    text = "---\nl0: &l0 [lol]\n" + levels + "title: bomb\n---\nbody\n"
    started = time.perf_counter()
    with pytest.raises(IngestError, match="frontmatter expands to more than 10,000 values"):
        parse_markdown(text, "bomb.md", kind="note", size_bytes=len(text), key="b")
    assert time.perf_counter() - started < 2


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    text = "---\nx: " + "[" * 200 + "]" * 200 + "\n---\nbody\n"
    with pytest.raises(IngestError, match="levels"):
        parse_markdown(text, "deep.md", kind="note", size_bytes=len(text), key="d")


@pytest.mark.parametrize("separator", ["\f", "\u2028", "\x85", "\x1c"])
def test_line_numbers_count_newlines_only(separator: str) -> None:
    body = f"# T\n\nfirst{separator}still line three\n\n## Next\n\nlemur\n"
    chunks = chunk_markdown(body, first_line=1, title="T")
    assert [(c.line_start, c.line_end) for c in chunks] == [(1, 3), (5, 7)]


def test_crlf_files() -> None:
    text = "---\r\ntitle: Windows\r\n---\r\n# Windows\r\n\r\nText\r\n\r\n## Part\r\n\r\nMore\r\n"
    doc = parse_markdown(text, "w.md", kind="note", size_bytes=len(text), key="w")
    assert doc.title == "Windows"
    assert [(c.line_start, c.line_end) for c in doc.chunks] == [(4, 6), (8, 10)]
    assert "\r" not in "".join(c.text for c in doc.chunks)


@pytest.mark.parametrize(
    ("fields", "date"),
    [
        ("modified: last tuesday", None),
        ("created: 1700000000", "2023-11-14T22:13:20Z"),
        ("created: 2025-03-04", "2025-03-04"),
        ("created: 2025-03-04T10:30:00+02:00", "2025-03-04T08:30:00Z"),
        ("created: '2025-03-04T10:30:00Z'", "2025-03-04T10:30:00Z"),
        ("created: [2025]", None),
    ],
)
def test_dates_are_validated(fields: str, date: str | None) -> None:
    text = f"---\n{fields}\n---\nbody\n"
    doc = parse_markdown(text, "d.md", kind="note", size_bytes=len(text), key="d")
    assert doc.date == date


@pytest.mark.parametrize(
    ("text", "title"),
    [
        ("# Notes on C#\n", "Notes on C#"),
        ("# snake_case_name and __init__.py\n", "snake_case_name and __init__.py"),
        ("# Closing hashes ##\n", "Closing hashes"),
        ("# The **bold** and `code` and *it*\n", "The bold and code and it"),
        ("---\ntitle: [a, b]\n---\n# From heading\n", "From heading"),
    ],
)
def test_titles(text: str, title: str) -> None:
    assert parse_markdown(text, "t.md", kind="note", size_bytes=len(text), key="t").title == title
