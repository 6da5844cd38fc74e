"""Frontmatter YAML by libyaml (issue 16): the same fields, dates and refusals as PyYAML's
pure-Python loader gave, seven times faster."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from memdex.errors import IngestError
from memdex.ingest import frontmatter
from memdex.ingest.frontmatter import _PyLoader, jsonable
from memdex.ingest.markdown import parse_markdown, split_frontmatter


def the_old_way(block: str) -> Any:
    "What memdex made of a block before: PyYAML's pure-Python loader, then jsonable."
    value = yaml.load(block, Loader=_PyLoader)
    return jsonable(value) if isinstance(value, dict) else value


def outcome(read: Any, block: str) -> Any:
    try:
        return ("ok", read(block))
    except IngestError as exc:
        return ("refused", str(exc))
    except yaml.YAMLError as exc:
        return ("broken", str(exc))
    except RecursionError:
        return ("too deep", "")
    except Exception as exc:  # a constructor's own error (!!float on a date): the same one either way
        return (type(exc).__name__, str(exc))


BLOCKS = {
    "plain fields": "id: m1\ntitle: 'A title'\ntags: [a, b]\ncount: 3\nscore: 0.5\nok: true\nnone: ~\n",
    "dates and times": "created: 2025-01-02\nmodified: 2025-01-02T10:00:00Z\nlocal: 2025-01-02 10:00:00+02:00\n",
    "a date typo stays text": "created: 2025-09-42T09:15:00Z\nupdated: 2025-13-01\n",
    "nested": "metadata:\n  title: Nested\n  tags:\n    - x\n    - y\n  created: 2025-03-04\n",
    "keys that are not strings": "1: one\ntrue: yes\n2025-01-01: new year\n1.5: half\n~: nothing\n",
    "keys that are equal": "1: one\ntrue: two\n1.0: three\n",
    "a key given twice": "title: first\ntitle: second\n",
    "a merge key": "base: &b {x: 1, y: 2}\nchild:\n  <<: *b\n  y: 3\n",
    "anchors and aliases": "a: &a [1, 2, {k: v}]\nb: *a\nc: *a\n",
    "tags of their own": "s: !!set {a, b}\no: !!omap [{a: 1}, {b: 2}]\nb: !!binary aGVsbG8=\nstr: !!str 12\n",
    "numbers in all forms": "h: 0x1F\no: 0o17\nb: 0b101\ns: 1:30\nu: 1_000\ni: .inf\nn: -.inf\nf: 6.8523015e+5\n",
    "a collection as a key": "? [a, b]\n: value\n",
    "a list, not fields": "- a\n- b\n",
    "a scalar, not fields": "Just a sentence.\n",
    "empty": "",
    "an unknown tag": "x: !custom thing\n",
    "a python tag": "x: !!python/object:os.system ls\n",
    "a recursive alias": "a: &a [*a]\n",
    "deeper than the bound": "x: " + "[" * 40 + "]" * 40 + "\n",
    "broken": "title: [unclosed\n",
    "two documents": "a: 1\n---\nb: 2\n",
    "a bomb": "l0: &l0 [lol]\n"
    + "".join(f"l{i}: &l{i} [" + ", ".join([f"*l{i - 1}"] * 9) + "]\n" for i in range(1, 9)),
    "nested past the C bound": "x: " + "[" * 1100 + "]" * 1100 + "\n",
}


@pytest.mark.slow
@pytest.mark.parametrize("block", list(BLOCKS.values()), ids=list(BLOCKS))
def test_fields_are_what_pyyaml_and_jsonable_made(block: str) -> None:
    assert outcome(frontmatter.fields, block) == outcome(the_old_way, block)


@pytest.mark.slow
@pytest.mark.parametrize(
    "block", [b for n, b in BLOCKS.items() if n != "a bomb"], ids=[n for n in BLOCKS if n != "a bomb"]
)
def test_load_is_what_pyyaml_made(block: str) -> None:
    # repr: a recursive alias builds a list that holds itself, which == cannot compare.
    assert repr(outcome(frontmatter.load, block)) == repr(
        outcome(lambda b: yaml.load(b, Loader=_PyLoader), block)
    )


# Frontmatter made of pieces that change what YAML reads: indicators, quotes, anchors, tags.
PIECES = ["a", "b: ", "1", "true", "~", "2025-01-02", "2025-02-30", "0x1F", "1.5", ".nan", "\n", "\n  ",
          "- ", "[", "]", "{", "}", ", ", "'q'", '"d"', "&x ", "*x", "<<: ", "!!str ", "!!set ", "? ",
          ": ", "#c", "|\n  t", "-1_0", "1:20"]  # fmt: skip


@pytest.mark.slow
@settings(max_examples=2000, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=30))
def test_fields_on_any_block(pieces: list[str]) -> None:
    block = "".join(pieces)
    old, new = outcome(the_old_way, block), outcome(frontmatter.fields, block)
    if old[0] == "broken" and new[0] == "ok":
        return  # see test_libyaml_reads_some_yaml_pyyaml_refused
    assert new == old


def test_libyaml_reads_some_yaml_pyyaml_refused() -> None:
    "The one difference found: a ? inside a flow collection, which YAML allows and PyYAML refuses."
    block = "tags: [deploy? maybe, later]\n"
    assert outcome(the_old_way, block)[0] == "broken"
    assert frontmatter.fields(block) == {"tags": ["deploy? maybe", "later"]}


def test_fields_of_every_stored_note(shared_data: Path) -> None:
    "The real frontmatter in shared/ (Serena memories, mnemonic, MIF examples) reads the same."
    read = 0
    for path in sorted(shared_data.rglob("*.md")):
        text = path.read_text("utf-8", errors="replace")
        if not text.startswith("---"):
            continue
        block = text.split("\n---", 1)[0][3:]
        read += 1
        assert outcome(frontmatter.fields, block) == outcome(the_old_way, block), path
    assert read > 20


@pytest.mark.slow
def test_nesting_that_would_crash_libyaml_is_a_reported_file() -> None:
    "libyaml recurses in C: 100,000 levels would end the process, not raise."
    text = "---\nx: " + "[" * 100_000 + "]" * 100_000 + "\n---\nbody\n"
    with pytest.raises(IngestError, match="nested too deeply"):
        split_frontmatter(text)
    with pytest.raises(IngestError, match="nested too deeply"):
        parse_markdown(text, "deep.md", kind="note", size_bytes=len(text), key="d")


def test_a_broken_block_is_reported_in_pyyaml_words() -> None:
    with pytest.raises(
        IngestError, match=r"^broken YAML frontmatter at line 2: expected ',' or ']', but got ':'$"
    ):
        split_frontmatter("---\ntitle: [unclosed\nnext: line\n---\nbody\n")


def test_an_alias_bomb_is_refused_quickly_by_the_quick_reading_too() -> None:
    block = BLOCKS["a bomb"]
    started = time.perf_counter()
    with pytest.raises(IngestError, match="more than 10,000 values"):
        frontmatter.fields(block)
    assert time.perf_counter() - started < 1
