"""What a kind's documents need elsewhere is the kind's to say, not a list of names (issue 13).

`memdex show` and retrieval read a whole file when its kind says a file is one document;
`memdex status` adds the counts a kind names. Both ask the registry by name, which answers
without loading any parser.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import memdex.ingest
from memdex.doors.dispatch import deliver, run
from memdex.doors.status import status
from memdex.ingest import BUILT_IN, KindTraits, register, sources, traits_of
from memdex.ingest.kinds.note import NoteKind
from memdex.ingest.kinds.serena import SerenaKind
from memdex.ingest.pipeline import index_paths
from memdex.query.documents import get_document


def test_every_built_in_kind_has_the_traits_the_registry_declares() -> None:
    "Declared once, in BUILT_IN (issue 36: previously on the class too, and checked to agree)."
    assert list(sources()) == list(BUILT_IN)  # registration order is the declaration's
    for name, kind in sources().items():
        assert traits_of(name) == kind.traits() == BUILT_IN[name][1], name
    whole = {name for name, kind in sources().items() if kind.traits().one_document_per_file}
    assert whole == {"memory", "note", "serena", "text"}
    assert sources()["serena"].traits().root_counts == ("serena_orphans",)
    resumed = {name for name, kind in sources().items() if kind.traits().resume is not None}
    assert resumed == {
        "claude-code",
        "codex",
        "gemini-cli",
        "copilot-cli",
        "opencode",
        "opencode-db",
        "aider",
    }
    assert traits_of("opencode-db").resume == traits_of("opencode").resume  # its documents are "opencode"


def test_a_kind_module_that_names_another_kind_is_refused_when_loaded(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(memdex.ingest, "_loaded", None)  # as in a fresh process
    monkeypatch.setitem(BUILT_IN, "note", ("memdex.ingest.kinds.memory:MemoryKind", KindTraits()))
    with pytest.raises(TypeError, match=r"MemoryKind is 'memory', but BUILT_IN names it 'note'"):
        memdex.ingest.sources()


def test_unknown_kinds_get_the_defaults() -> None:
    for name in ("files", "a-plugin-not-loaded-here", None):
        assert traits_of(name) == KindTraits(one_document_per_file=False, root_counts=())


def test_show_search_and_status_start_without_any_parser() -> None:
    "The registry answers by name from its declaration: no parser, no YAML, is imported."
    code = (
        "import sys, memdex.query.documents, memdex.doors.outputs, memdex.doors.status\n"
        "from memdex.ingest import traits_of\n"
        "assert traits_of('serena').one_document_per_file\n"
        "print(sorted(m for m in sys.modules if m.startswith(('memdex.ingest.', 'yaml', 'frontmatter'))))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "['memdex.ingest.base']"


# -- a kind registered at run time (a plugin) is asked the same way as the built-in ones --------
class PlainText(NoteKind):
    "Markdown whose files the plugin says are not one document each: read from the index."

    name = "plain-text"
    one_document_per_file = False


class WholeText(NoteKind):
    name = "whole-text"
    one_document_per_file = True


@pytest.fixture
def plugin_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for kind in (PlainText(), WholeText()):
        monkeypatch.setitem(sources(), kind.name, kind)
    root = tmp_path / "plugin"
    root.mkdir()
    (root / "a.md").write_text("# Avocet\n\nWaders with upturned bills.\n")
    return root


@pytest.mark.parametrize(("kind", "read_from"), [(PlainText, "index"), (WholeText, "file")])
def test_show_reads_the_file_when_the_kind_says_it_is_one_document(
    conn: sqlite3.Connection, plugin_root: Path, kind: type[NoteKind], read_from: str
) -> None:
    index_paths(conn, [plugin_root], kind=kind.name)
    doc = get_document(conn, str(plugin_root / "a.md"))
    assert (doc["kind"], doc["read_from"]) == (kind.name, read_from)
    assert "upturned bills" in doc["text"]


@pytest.mark.parametrize(("kind", "whole_file"), [(PlainText, False), (WholeText, True)])
def test_retrieve_copies_the_file_when_the_kind_says_it_is_one_document(
    conn: sqlite3.Connection, plugin_root: Path, tmp_path: Path, kind: type[NoteKind], whole_file: bool
) -> None:
    index_paths(conn, [plugin_root], kind=kind.name)
    outcome = deliver(conn, run(conn, "avocet"), retrieve_dir=str(tmp_path / "got"))
    assert outcome.retrieved is not None
    (entry,) = outcome.retrieved["files"]
    copied = (tmp_path / "got" / entry["file"]).read_bytes()
    assert entry["whole_file"] is whole_file
    assert (copied == (plugin_root / "a.md").read_bytes()) is whole_file
    assert entry["file"] == ("01-a.md" if whole_file else "01-avocet.md")


# -- memdex status --------------------------------------------------------------------------------
def test_status_adds_the_counts_a_roots_kind_names(
    conn: sqlite3.Connection, sample_copy: Path, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class CountedNotes(NoteKind):
        "A plugin's kind naming a count; the query lists no root of it, so each counts 0."

        name = "counted-notes"
        root_counts = ("serena_orphans",)

    monkeypatch.setitem(sources(), CountedNotes.name, CountedNotes())
    (sample_copy / "serena" / "stray.md").write_text("# Stray\n\nNo index row points here.\n")
    index_paths(conn, [sample_copy / "serena", sample_copy / "notes"])
    index_paths(conn, [sample_copy / "memories"], kind="counted-notes")
    roots = {Path(r["path"]).name: r for r in status(conn, db_path)["roots"]}
    assert roots["serena"]["orphans"] == 1
    assert "orphans" not in roots["notes"]
    assert roots["memories"]["orphans"] == 0


def test_a_forced_serena_root_gets_its_counts_too(
    conn: sqlite3.Connection, tmp_path: Path, db_path: Path
) -> None:
    root = tmp_path / "mem"
    root.mkdir()
    (root / "lonely.md").write_text("# Lonely\n\nNo index points here.\n")
    index_paths(conn, [root], kind="serena")
    (only,) = status(conn, db_path)["roots"]
    assert (only["kind"], only["orphans"]) == ("serena", 1)


def test_a_registered_kind_comes_after_the_built_in_ones_with_its_own_traits() -> None:
    class Later(SerenaKind):
        "A plugin reads as Serena does, and declares its traits on its class."

        name = "later"
        one_document_per_file = True
        root_counts = ("serena_orphans",)

    register(Later())
    try:
        assert list(sources()) == [*BUILT_IN, "later"]
        assert traits_of("later") == sources()["serena"].traits()
    finally:
        del sources()["later"]
