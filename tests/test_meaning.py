"""Search by meaning: `memdex embed`, vectors in the index, the meaning pass and its fusion,
with the real all-MiniLM-L6-v2 files from ../shared/data/models and real SQLite files."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.ingest.pipeline import index_paths
from memdex.query.engine import Engine
from memdex.query.meaning.embed import DEFAULT_COVERAGE, embed, missing, passage_encoder
from memdex.query.meaning.embed import vector_model as coverage_model
from memdex.query.meaning.encoder import Encoder
from memdex.query.meaning.model import load_spec
from memdex.query.search import search
from memdex.store import db

from .conftest import search_in_a_new_process, shared


def vector_model(spec: object) -> str:
    "The name `memdex embed` stores a model's vectors under in a new index."
    return coverage_model(spec, DEFAULT_COVERAGE)  # type: ignore[arg-type]


# A question in other words than the memory's, none of them in the sample corpus: the outage
# retro speaks of "search returned nothing for two hours".
PARAPHRASE = "nobody could look anything up"
OUTAGE = "Retro: the search outage of 14 October"


@pytest.fixture(scope="module")
def model_dir(minilm: Path) -> Path:
    return minilm


@pytest.fixture(scope="module")
def encoder(model_dir: Path) -> Encoder:
    return passage_encoder(load_spec(model_dir))


@pytest.fixture(scope="module")
def embedded_template(tmp_path_factory: pytest.TempPathFactory, encoder: Encoder) -> Path:
    "The sample corpus indexed as `memdex demo` does, with vectors: built once for the module."
    from .conftest import SAMPLE

    folder = tmp_path_factory.mktemp("embedded")
    corpus = folder / "sample"
    shutil.copytree(SAMPLE, corpus, ignore=shutil.ignore_patterns("__pycache__", "README.txt"))
    template = folder / "template.db"
    conn = db.connect(template)
    index_paths(conn, [corpus / name for name in ("memories", "serena", "notes", "chats")])
    embed(conn, encoder)
    conn.close()
    return template


@pytest.fixture
def embedded(embedded_template: Path, db_path: Path) -> Iterator[sqlite3.Connection]:
    "A copy of the embedded sample index of this test's own (searches only; its files are shared)."
    shutil.copyfile(embedded_template, db_path)
    conn = db.connect(db_path)
    yield conn
    conn.close()


def _run(db_path: Path, *args: str) -> object:
    result = CliRunner().invoke(cli, ["--db", str(db_path), *args], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result


@pytest.mark.slow
def test_embed_gives_every_chunk_a_vector_once(
    sample: sqlite3.Connection, db_path: Path, model_dir: Path
) -> None:
    chunks = sample.execute("SELECT count(*) FROM chunks").fetchone()[0]
    first = json.loads(_run(db_path, "embed", "--model", str(model_dir), "--json").stdout)
    assert first["embedded"] + first["reused"] == chunks and first["embedded"] > 0
    stored = sample.execute("SELECT count(*), count(DISTINCT chunk_id) FROM chunk_vectors").fetchone()
    assert tuple(stored) == (chunks, chunks)
    again = json.loads(_run(db_path, "embed", "--model", str(model_dir), "--json").stdout)
    assert again["embedded"] == 0 and again["reused"] == 0
    status = json.loads(_run(db_path, "status", "--json").stdout)
    (model,) = status["semantic"]["models"]
    assert model["vectors"] == chunks and model["name"] == vector_model(load_spec(model_dir))


@pytest.mark.slow
def test_a_changed_chunk_is_embedded_again_and_an_unchanged_one_reuses_its_vector(
    sample: sqlite3.Connection, sample_copy: Path, encoder: Encoder
) -> None:
    embed(sample, encoder)
    note = sample_copy / "memories" / "episodes" / "user" / "2025-10-14-outage-retro.memory.md"
    text = note.read_text()
    note.write_text(text.replace("pages on zero results.", "pages the on-call engineer on zero results."))
    index_paths(sample, [sample_copy / "memories"])
    assert missing(sample, vector_model(encoder.spec)) > 0  # the file's chunks have new ids
    report = embed(sample, encoder)
    assert report.embedded >= 1  # the section whose text changed
    assert report.reused >= 1  # the title section, unchanged, under a new id
    assert report.removed >= 1  # the old ids' vectors are collected
    assert missing(sample, vector_model(encoder.spec)) == 0


def test_a_paraphrase_is_found_by_meaning_and_says_so(embedded: sqlite3.Connection, encoder: Encoder) -> None:
    words_only = search(embedded, PARAPHRASE, semantic=False)
    # No word of it is in the memory: words alone miss it (nothing matched the words as typed,
    # so the nearest indexed words were searched instead, and say so: issue 26's typos)
    assert OUTAGE not in [h.title for h in words_only.hits]
    assert words_only.typos and words_only.typos["why"] == "nothing matched the words as typed"
    assert words_only.semantic == {
        "used": False,
        "model": None,
        "ms": 0.0,
        "reason": "turned off (--no-semantic)",
    }
    result = search(embedded, PARAPHRASE)
    assert (
        result.semantic is not None
        and result.semantic["used"]
        and result.semantic["model"] == vector_model(encoder.spec)
    )
    hit = result.hits[0]
    assert hit.title == OUTAGE and hit.match_layer == 5  # found by meaning alone: its own layer
    why = hit.why_relevant
    assert why["layer_name"] == "meaning" and why["match"] == "meaning" and why["similarity"] > 0.3
    assert why["passage"] == OUTAGE  # the heading of the chunk it matched
    assert why["summary"].startswith(f"layer 5 (meaning): similarity {why['similarity']:.2f} to")
    assert why["terms"] == [] and why["missing"]  # none of its words are in the memory
    assert 0 < hit.relevance <= 0.7


def test_meaning_over_part_of_the_index_says_how_much_it_covers(
    embedded: sqlite3.Connection, tmp_path: Path
) -> None:
    "Issue 39: chunks written since `memdex embed` have no vector; a search says so, not pretends."
    whole = search(embedded, PARAPHRASE)
    chunks = embedded.execute("SELECT count(*) FROM chunks").fetchone()[0]
    assert whole.semantic is not None and whole.semantic["embedded"] == {"chunks": chunks, "of": chunks}
    assert not any(n.startswith("meaning covers") for n in whole.notes)
    notes = tmp_path / "later"
    notes.mkdir()
    for i in range(3):
        (notes / f"n{i}.md").write_text(f"# Later note {i}\n\nWritten after the vectors were made.\n")
    index_paths(embedded, [notes])
    part = search(embedded, PARAPHRASE)
    assert part.semantic is not None and part.semantic["used"]
    assert part.semantic["embedded"] == {"chunks": chunks, "of": chunks + 3}
    share = chunks * 100 // (chunks + 3)
    assert f"meaning covers {chunks:,} of {chunks + 3:,} chunks ({share}%)" in " ".join(part.notes)


def test_exact_names_stay_the_words_job(embedded: sqlite3.Connection, encoder: Encoder) -> None:
    "A query whose words all match keeps the words' results first, in the words' order."
    for query in ("worktree cleanup", "postgres billing", "Chatty"):
        words = [h.id for h in search(embedded, query, semantic=False).hits if h.match_layer <= 4]
        fused = [h.id for h in search(embedded, query).hits]
        assert fused[: len(words)] == words, query


def test_filters_apply_to_what_meaning_finds(embedded: sqlite3.Connection, encoder: Encoder) -> None:
    memories = search(embedded, PARAPHRASE, filters=memdex_filters(kinds=["memory"]))
    assert memories.hits and {h.kind for h in memories.hits} == {"memory"}
    assert OUTAGE in [h.title for h in memories.hits]
    notes = search(embedded, PARAPHRASE, filters=memdex_filters(kinds=["note"]))
    assert {h.kind for h in notes.hits} <= {"note"} and OUTAGE not in [h.title for h in notes.hits]


def memdex_filters(**fields: object) -> object:
    from memdex import Filters

    return Filters(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize("query", ['"', "AND", "NEAR(", "foo:", "-x", "*", "日本語のメモ", "x" * 10_000])
def test_hostile_queries_with_meaning_on(embedded: sqlite3.Connection, encoder: Encoder, query: str) -> None:
    result = search(embedded, query, semantic=True)
    if result.terms:  # a query with words to search for is searched by meaning too, unless
        # results that matched every key word already fill the page
        assert result.semantic is not None
        settled = sum(1 for h in result.hits if h.why_relevant["match"] == "all") >= 10
        assert result.semantic["used"] or (settled and result.semantic["reason"].startswith("not needed"))
    else:
        assert result.semantic is None and "the query has no words to search for" in result.notes


def test_without_vectors_meaning_is_off_and_says_why(sample: sqlite3.Connection, db_path: Path) -> None:
    quiet = search(sample, PARAPHRASE)
    assert quiet.semantic is not None and quiet.semantic["used"] is False
    assert "no vectors" in quiet.semantic["reason"] and not any("meaning off" in n for n in quiet.notes)
    asked = json.loads(_run(db_path, "search", PARAPHRASE, "--semantic", "--json").stdout)
    assert "meaning off: no vectors in this index (run `memdex embed`)" in asked["notes"]


@pytest.mark.slow
def test_a_model_that_moved_turns_meaning_off_with_a_note(
    sample: sqlite3.Connection, model_dir: Path, tmp_path: Path, db_path: Path
) -> None:
    moved = tmp_path / "model"
    shutil.copytree(model_dir, moved)
    embed(sample, passage_encoder(load_spec(moved)))
    shutil.rmtree(moved)
    out = json.loads(_run(db_path, "search", PARAPHRASE, "--json").stdout)
    assert out["semantic"]["used"] is False
    assert any(n.startswith("meaning off: the embedding model is no longer at") for n in out["notes"])
    assert out["results"] or out["found"] == 0  # the words' search still ran


@pytest.mark.slow
def test_a_model_given_by_a_relative_path_is_found_from_any_folder(
    conn: sqlite3.Connection, db_path: Path, model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Previously `memdex embed --model ../models/x` stored ../models/x, and a search run from
    another folder said "meaning off: the embedding model is no longer at ../models/x"."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Retro\n\nSearch returned nothing for two hours.\n")
    index_paths(conn, [notes])
    linked = tmp_path / "models" / "minilm"
    linked.parent.mkdir()
    linked.symlink_to(model_dir)
    monkeypatch.chdir(notes)
    _run(db_path, "embed", "--model", os.path.relpath(linked))
    (source,) = conn.execute("SELECT source FROM embedding_models").fetchone()
    assert source == str(model_dir.resolve())
    monkeypatch.chdir(tmp_path.parent)
    out = json.loads(_run(db_path, "search", PARAPHRASE, "--json").stdout)
    assert out["semantic"]["used"] is True, out["notes"]
    # An index an older memdex stored the relative path in: embedding again stores it whole.
    with db.transaction(conn):
        conn.execute("UPDATE embedding_models SET source = 'models/minilm'")
    monkeypatch.chdir(tmp_path)
    assert json.loads(_run(db_path, "embed", "--model", "models/minilm", "--json").stdout)["embedded"] == 0
    assert conn.execute("SELECT source FROM embedding_models").fetchone()[0] == str(model_dir.resolve())


def test_drop_removes_the_vectors(
    embedded: sqlite3.Connection, db_path: Path, encoder: Encoder, model_dir: Path
) -> None:
    from memdex.query.meaning.matrix_file import matrix_path

    search(embedded, PARAPHRASE)  # writes the matrix file
    path = matrix_path(embedded)
    assert path is not None and path.exists()
    out = json.loads(_run(db_path, "embed", "--drop", "--json").stdout)
    assert out["dropped"] > 0 and not path.exists()
    assert embedded.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0] == 0
    assert search(embedded, PARAPHRASE).semantic["used"] is False  # type: ignore[index]


def test_the_semantic_switch_reaches_batch_and_mcp_requests(
    embedded: sqlite3.Connection, encoder: Encoder
) -> None:
    from memdex.doors.batch import run_batch

    lines = [
        json.dumps({"id": 1, "query": PARAPHRASE, "semantic": False}),
        json.dumps({"id": 2, "query": PARAPHRASE}),
    ]
    off, on = list(run_batch(embedded, lines))
    assert OUTAGE not in [r["title"] for r in off["results"]]
    assert on["results"][0]["title"] == OUTAGE
    assert not on["typos"]["searched_instead"]  # found by meaning: only a "did you mean" note


@pytest.mark.slow
def test_embed_resumes_after_kill_9(tmp_path: Path, model_dir: Path) -> None:
    "Killed mid-run, `memdex embed` keeps what it committed and the next run finishes the rest."
    db_path = tmp_path / "serena.db"
    conn = db.connect(db_path)
    index_paths(conn, [shared("serena-memories", "skills")])  # 38 memories, a few hundred chunks
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    proc = subprocess.Popen(
        [sys.executable, "-m", "memdex", "--db", str(db_path), "embed", "--model", str(model_dir)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    done = 0
    while time.monotonic() < deadline and proc.poll() is None:
        done = conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0]
        if done > 0:
            break
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    kept = conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0]
    assert chunks > kept >= done > 0  # killed mid-run, after its first batch committed
    assert db.check(conn) == []
    report = embed(conn, passage_encoder(load_spec(model_dir)))
    assert report.embedded + report.reused == chunks - kept
    assert conn.execute("SELECT count(DISTINCT chunk_id) FROM chunk_vectors").fetchone()[0] == chunks
    conn.close()


@pytest.mark.slow
def test_the_watcher_embeds_what_it_writes(
    sample: sqlite3.Connection,
    db_path: Path,
    sample_copy: Path,
    encoder: Encoder,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    "With the watcher running, a new memory is found by meaning once its vectors follow its words."
    from .test_service import running

    monkeypatch.delenv("MEMDEX_INDEX_SEMANTIC")  # the default: vectors follow the words
    embed(sample, encoder)
    model = vector_model(encoder.spec)
    with running(db_path) as service:
        note = sample_copy / "notes" / "kitchen-fire.md"
        note.write_text("# The kitchen fire drill\n\nSmoke alarms went off and everyone left the building.\n")
        deadline = time.monotonic() + 60
        found: list[str] = []
        while time.monotonic() < deadline:
            result = search(sample, "residents exited during a blaze", limit=3)  # none of its words
            found = [h.title for h in result.hits]
            if "The kitchen fire drill" in found and missing(sample, model) == 0:
                break
            time.sleep(0.1)
        assert "The kitchen fire drill" in found
        assert missing(sample, model) == 0
        assert service.meaning.state["embedded"] >= 1 and service.meaning.state["model"] == model
        while time.monotonic() < deadline and _file_state(sample) != "current":
            time.sleep(0.1)  # the follower writes the matrix file after its last slice
        assert _file_state(sample) == "current"
        assert service.meaning.state["matrix"] in ("written", "current")


def test_meaning_is_skipped_when_exact_matches_fill_the_page(embedded: sqlite3.Connection) -> None:
    "Results that matched every key word keep their places first: then meaning could change nothing."
    result = search(embedded, "worktree", limit=1)
    assert result.hits[0].why_relevant["match"] == "all"
    assert result.semantic is not None and result.semantic["used"] is False
    assert result.semantic["reason"] == "not needed: enough results matched every key word"
    wider = search(embedded, "worktree", limit=10)  # not enough of them for ten: meaning runs
    assert wider.semantic is not None and wider.semantic["used"] is True


# -- the matrix file beside the index, and the reload check (issue 30) ------------------------


def _outage_chunks(conn: sqlite3.Connection) -> list[int]:
    return [
        r[0]
        for r in conn.execute(
            "SELECT c.id FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.title = ?", (OUTAGE,)
        )
    ]


def _found_by_meaning(
    conn: sqlite3.Connection, query: str = PARAPHRASE, engine: Engine | None = None
) -> list[int]:
    """The chunks a meaning pass finds, with ``engine``'s matrix and encoder; without one, a new
    engine's, as a new process finds them."""
    from memdex.query.meaning.passes import meaning_pass
    from memdex.query.request import Filters

    found = meaning_pass(conn, query, True, Filters().params(), engine or Engine())
    assert found.used, found.reason
    return [n.chunk_id for n in found.near]


def _matrix_of(conn: sqlite3.Connection, engine: Engine | None = None) -> object:
    from memdex.query.meaning import current_model

    row = current_model(conn)
    return (engine or Engine()).matrix(conn, row["name"], row["dim"])


def _file_state(conn: sqlite3.Connection) -> str:
    from memdex.query.meaning import current_model
    from memdex.query.meaning.matrix_file import current_version, file_state, matrix_path

    path = matrix_path(conn)
    assert path is not None
    return file_state(path, current_model(conn)["name"], current_version(conn))


def test_embed_writes_the_matrix_file_and_a_new_process_maps_it(
    sample: sqlite3.Connection, db_path: Path, encoder: Encoder
) -> None:
    report = embed(sample, encoder)
    assert report.matrix == "written" and _file_state(sample) == "current"
    loaded = _matrix_of(sample)  # a new engine's, as a new process finds it
    assert loaded.source == "file"  # type: ignore[attr-defined]
    assert _found_by_meaning(sample)[0] in _outage_chunks(sample)
    assert embed(sample, encoder).matrix == "current"  # nothing changed: nothing rewritten


def np_equal(a: object, b: object) -> bool:
    import numpy as np

    return bool(np.array_equal(a, b))  # type: ignore[arg-type]


def test_a_stale_matrix_file_is_never_used(embedded: sqlite3.Connection, db_path: Path) -> None:
    "The file was made before the outage's vectors were removed: a search must not find them."
    from memdex.query.meaning.matrix_file import matrix_path

    engine = Engine()  # this process's
    assert _found_by_meaning(embedded, engine=engine)[0] in _outage_chunks(embedded)  # and writes the file
    path = matrix_path(embedded)
    assert path is not None and _file_state(embedded) == "current"
    stale = path.read_bytes()
    other = db.connect(db_path)  # another process's writer
    with db.transaction(other):
        other.execute(
            "DELETE FROM chunk_vectors WHERE chunk_id IN (SELECT value FROM json_each(?))",
            (json.dumps(_outage_chunks(embedded)),),
        )
    other.close()
    assert path.read_bytes() == stale and _file_state(embedded) == "stale"
    for fresh in (False, True):  # this process's matrix, and a new process's
        if fresh:
            engine = Engine()
            path.write_bytes(stale)
        assert not set(_found_by_meaning(embedded, engine=engine)) & set(_outage_chunks(embedded))
    assert _file_state(embedded) == "current"  # the search wrote it again
    # Made from the stale file's rows and the index's changes: as if read anew from the index.
    from memdex.query.meaning import current_model
    from memdex.query.meaning.vectors import load

    anew, made = load(embedded, current_model(embedded)["name"], 384), _matrix_of(embedded, engine)
    for name in ("vectors", "factors", "starts", "chunk_ids", "document_ids", "keys"):
        assert np_equal(getattr(made, name), getattr(anew, name)), name


def test_a_missing_or_corrupt_matrix_file_is_read_again_from_the_index(
    embedded: sqlite3.Connection, db_path: Path
) -> None:
    from memdex.query.meaning.matrix_file import matrix_path

    want = _found_by_meaning(embedded)
    path = matrix_path(embedded)
    assert path is not None
    whole = path.read_bytes()
    for damage in (b"", whole[:-7], whole[:100] + b"\xff" * (len(whole) - 100), None):
        if damage is None:
            path.unlink()
        else:
            path.write_bytes(damage)
        assert _found_by_meaning(embedded) == want
        assert path.read_bytes() == whole  # written again, the same
    # Its header whole, its body not: the writer's check reads all of it, not the header alone.
    from memdex.query.meaning import current_model
    from memdex.query.meaning.vectors import refresh

    path.write_bytes(whole[:-1024] + b"\xff" * 1024)  # the chunk ids among them: all -1
    # A writer killed mid-write an hour ago left its temporary file; one writing now, its own.
    killed, writing = (path.with_name(f".{path.name}.{n}.tmp") for n in ("killed", "writing"))
    for leftover in (killed, writing):
        leftover.write_bytes(whole[:1000])
    os.utime(killed, (time.time() - 7200, time.time() - 7200))
    assert refresh(embedded, current_model(embedded)["name"]) == "written"
    assert path.read_bytes() == whole
    assert not killed.exists() and writing.exists()


def test_the_reload_check_reads_no_vectors_until_the_index_changes(
    embedded: sqlite3.Connection, db_path: Path
) -> None:
    """A resident process (the MCP server, the watcher) searching again reads one row, not the
    vectors: before issue 30 every search counted them twice over (16 ms at 100,000)."""
    search(embedded, PARAPHRASE)  # the model and the matrix loaded
    statements: list[str] = []
    embedded.set_trace_callback(statements.append)
    try:
        result = search(embedded, PARAPHRASE)
    finally:
        embedded.set_trace_callback(None)
    assert result.hits[0].title == OUTAGE
    assert not [s for s in statements if "chunk_vectors" in s], statements
    other = db.connect(db_path)
    with db.transaction(other):
        other.execute(
            "DELETE FROM chunk_vectors WHERE chunk_id IN (SELECT value FROM json_each(?))",
            (json.dumps(_outage_chunks(embedded)),),
        )
    other.close()
    assert not set(_found_by_meaning(embedded)) & set(_outage_chunks(embedded))  # seen at once


def test_filters_choose_among_all_the_vectors_not_the_nearest_few(
    embedded: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The nearest memories, as many as the pass takes, even when the nearest chunks of all are
    Serena's: previously the nearest MEANING_DEPTH of all were taken, then filtered."""
    from memdex.query import ranking
    from memdex.query.meaning.passes import meaning_pass
    from memdex.query.request import Filters

    query = "merge conflicts in git"
    kind = dict(
        embedded.execute(
            "SELECT c.id, d.kind FROM chunks c JOIN documents d ON d.id = c.document_id"
        ).fetchall()
    )
    everything = _found_by_meaning(embedded, query)
    monkeypatch.setattr(ranking, "MEANING_DEPTH", 3)
    assert "memory" not in [kind[c] for c in everything[:3]]  # a filter after would keep none
    memories = [c for c in everything if kind[c] == "memory"][:3]
    engine = Engine()
    found = meaning_pass(embedded, query, True, Filters(kinds=["memory"]).params(), engine)
    assert [n.chunk_id for n in found.near] == memories and len(memories) >= 2
    # Asked again, the documents the filter allows are the connection's already.
    statements: list[str] = []
    embedded.set_trace_callback(statements.append)
    try:
        again = meaning_pass(embedded, query, True, Filters(kinds=["memory"]).params(), engine)
    finally:
        embedded.set_trace_callback(None)
    assert [n.chunk_id for n in again.near] == memories
    assert not [s for s in statements if "SELECT d.id FROM documents d" in s]


@pytest.mark.slow
def test_a_reader_that_may_not_write_searches_the_index_not_a_stale_file(
    embedded: sqlite3.Connection, db_path: Path, tmp_path: Path
) -> None:
    "Without root's DAC override (util-linux setpriv), so the folder really is read-only."
    from memdex.query.meaning.matrix_file import matrix_path

    _found_by_meaning(embedded)  # writes the file
    path = matrix_path(embedded)
    assert path is not None
    with db.transaction(embedded):
        embedded.execute(
            "DELETE FROM chunk_vectors WHERE chunk_id IN (SELECT value FROM json_each(?))",
            (json.dumps(_outage_chunks(embedded)),),
        )
    embedded.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    stale = path.read_bytes()
    folder = db_path.parent
    prefix = ["setpriv", "--bounding-set=-dac_override,-dac_read_search"] if os.geteuid() == 0 else []
    folder.chmod(0o555)
    try:
        out = subprocess.run(
            [*prefix, sys.executable, "-m", "memdex", "--db", str(db_path), "search", PARAPHRASE, "--json"],
            capture_output=True,
            text=True,
        )
    finally:
        folder.chmod(0o755)
    assert out.returncode == 0, out.stderr
    found = json.loads(out.stdout)
    assert found["semantic"]["used"] is True
    assert OUTAGE not in [r["title"] for r in found["results"] if r["match_layer"] == 5]
    assert path.read_bytes() == stale  # left as it was: it could not be written


@pytest.mark.slow
def test_vectors_made_at_fp32_are_searched_with_an_fp32_query(
    sample: sqlite3.Connection, model_dir: Path
) -> None:
    """An index embedded before int8 existed (fp32, names without -int8) keeps meaning on: the
    query is encoded at the vectors' own precision, not the default's."""
    fp32 = passage_encoder(load_spec(model_dir, "fp32"))
    embed(sample, fp32)
    result = search(sample, PARAPHRASE)
    assert result.semantic is not None and result.semantic["used"], result.notes
    assert "-int8" not in result.semantic["model"] and result.hits[0].title == OUTAGE


@pytest.fixture
def staying() -> Iterator[Engine]:
    "An engine that stays (as memdex serve's, an MCP session's), onnxruntime installed; closed after"
    pytest.importorskip("onnxruntime")
    with Engine(stays=True) as engine:
        yield engine


def _builders() -> list[threading.Thread]:
    "The threads building onnxruntime's query encoder now"
    return [t for t in threading.enumerate() if t.name == "memdex-query-encoder"]


def test_an_engine_that_stays_moves_its_query_encoder_to_onnxruntime(
    embedded: sqlite3.Connection, staying: Engine
) -> None:
    "After its second search an engine that stays encodes queries with onnxruntime, built on its thread; same nearest chunks"
    from memdex.query.engine import RESIDENT_AFTER
    from memdex.query.meaning.passes import meaning_pass
    from memdex.query.request import Filters

    numpy_pass = meaning_pass(embedded, PARAPHRASE, True, Filters().params(), staying)
    assert staying.backends() == ["numpy"]
    for _ in range(RESIDENT_AFTER - 1):
        meaning_pass(embedded, PARAPHRASE, True, Filters().params(), staying)
    assert not _builders()
    staying.after_search()  # what a search does when it is done (query.search)
    (builder,) = _builders()
    builder.join(timeout=60)
    assert staying.backends() == ["onnx"]
    onnx_pass = meaning_pass(embedded, PARAPHRASE, True, Filters().params(), staying)
    # The same arithmetic; at int8 fp32's own small differences (LayerNorm, GELU) tip a few
    # roundings the other way (test_encoder_int8: cosine between backends above 0.99).
    theirs = {n.chunk_id: n.similarity for n in numpy_pass.near}
    assert onnx_pass.near[0].chunk_id == numpy_pass.near[0].chunk_id
    assert len(set(theirs) & {n.chunk_id for n in onnx_pass.near}) >= len(theirs) - 1
    for ours in onnx_pass.near:
        assert ours.chunk_id not in theirs or abs(ours.similarity - theirs[ours.chunk_id]) < 0.01
    assert not _builders()  # built once
    meaning_pass(embedded, PARAPHRASE, True, Filters().params(), staying)
    staying.after_search()
    assert not _builders()


def test_the_build_starts_once_when_a_pass_is_done_never_in_the_search(
    embedded: sqlite3.Connection, staying: Engine
) -> None:
    "Asking for the encoder never builds it (it did, 0.2 s inside that search); searches ending at once build one"
    from memdex.query.engine import RESIDENT_AFTER
    from memdex.query.meaning import current_model, model_path
    from memdex.query.meaning.model import precision_of

    row = current_model(embedded)
    key = (model_path(row["source"]), precision_of(row["name"]))
    for _ in range(RESIDENT_AFTER + 1):
        assert staying.encoder(*key).backend == "numpy"
    assert not _builders()
    staying.searched(*key)
    staying.searched(*key)  # a server's two searches, done together
    assert not _builders()  # not inside the search: when it is done
    staying.after_search()
    staying.after_search()
    (builder,) = _builders()
    builder.join(timeout=60)
    assert staying.backends() == ["onnx"]


def test_a_search_builds_it_when_it_is_done(embedded: sqlite3.Connection, staying: Engine) -> None:
    "Through the search: the RESIDENT_AFTER-th search returns, then the build runs on the engine's thread"
    from memdex.query.engine import RESIDENT_AFTER

    for _ in range(RESIDENT_AFTER - 1):
        assert search(embedded, PARAPHRASE, staying, semantic=True).semantic["used"]
        assert not _builders()
    assert search(embedded, PARAPHRASE, staying, semantic=True).semantic["used"]
    staying.close()  # waits for the build it started
    assert not _builders()


def test_an_engine_that_does_not_stay_starts_no_thread(embedded: sqlite3.Connection) -> None:
    """Issue 36: previously the second search by meaning of any process (memdex.search in a
    user's script) started a thread the script then waited for at its exit. An Index, as a
    search with no engine, keeps to numpy and starts none."""
    import memdex

    with memdex.Index(db.path_of(embedded)) as index:
        for _ in range(4):
            assert index.search(PARAPHRASE, semantic=True).semantic["used"]
            assert not _builders()
        assert index.engine.backends() == ["numpy"]
    for _ in range(3):
        assert search(embedded, PARAPHRASE, semantic=True).semantic["used"]
    assert not _builders()


@pytest.mark.slow
def test_a_script_that_searches_by_meaning_three_times_exits_with_no_thread_left(
    embedded: sqlite3.Connection, db_path: Path
) -> None:
    "The Done-means of issue 36, as a user's script: three searches, then the threads alive at its end."
    embedded.close()
    script = "\n".join(
        [
            "import sys, threading, memdex",
            f"index = memdex.Index({str(db_path)!r})",
            f"used = [index.search({PARAPHRASE!r}, semantic=True).semantic['used'] for _ in range(3)]",
            "index.close()",
            "print(used, [t.name for t in threading.enumerate() if t is not threading.main_thread()])",
        ]
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[True, True, True] []"


def test_an_engine_warmed_up_encodes_on_onnxruntime_from_its_first_search(
    embedded: sqlite3.Connection, staying: Engine
) -> None:
    "Engine.warm (memdex serve's warm-up): the encoder built now, on this thread; no build later"
    from memdex.query.engine import RESIDENT_AFTER
    from memdex.query.meaning.passes import meaning_pass
    from memdex.query.request import Filters

    assert staying.warm(embedded) == "onnx"
    assert staying.backends() == ["onnx"]
    for _ in range(RESIDENT_AFTER + 1):
        found = meaning_pass(embedded, PARAPHRASE, True, Filters().params(), staying)
        assert found.used and found.near
        staying.after_search()
        assert not _builders()
    assert staying.backends() == ["onnx"]


@pytest.mark.slow
def test_memdex_serve_warms_up_with_onnxruntimes_query_encoder(
    embedded: sqlite3.Connection, db_path: Path
) -> None:
    "A real server: its warm-up says which encoder its callers' queries get, before any caller"
    pytest.importorskip("onnxruntime")
    from memdex.doors.serve import client

    from .test_serve import start_server, stop_server

    embedded.close()
    served = start_server(db_path, "--read-only")
    try:
        warm = (client.ping(str(db_path)) or {})["warm"]
        assert warm["query_encoder"] == "onnx", warm
        assert warm["meaning"]["used"], warm
    finally:
        assert stop_server(served) == 0, served.log.read_text()


def test_warming_up_is_nothing_where_meaning_cannot_run(sample: sqlite3.Connection) -> None:
    "An index without vectors: no encoder loaded, and the searches say why as before"
    with Engine(stays=True) as engine:
        assert engine.warm(sample) is None
        assert engine.backends() == []


def test_a_cli_search_with_meaning_loads_neither_tokenizers_nor_onnxruntime(
    embedded: sqlite3.Connection, db_path: Path
) -> None:
    "What a one-shot search loads: numpy's encoder, the kept weights and vocabulary, nothing more"
    shown, (modules,) = search_in_a_new_process(
        db_path,
        PARAPHRASE,
        "print(sorted(m for m in ('numpy', 'tokenizers', 'onnxruntime', 'threadpoolctl') if m in sys.modules))",
    )
    semantic = shown["semantic"]
    assert isinstance(semantic, dict) and semantic["used"]
    assert modules == "['numpy']"


def test_a_tokenizer_gone_bad_under_a_loaded_encoder_turns_meaning_off(
    embedded: sqlite3.Connection, monkeypatch: pytest.MonkeyPatch
) -> None:
    "Text the quick path leaves to `tokenizers`, whose file no longer reads: words answer, with a note"
    engine = Engine()
    search(embedded, PARAPHRASE, engine)  # the encoder loaded, `tokenizers` not
    (encoder,) = engine._encoders.values()
    monkeypatch.setattr(type(encoder.spec), "tokenizer_file", property(lambda spec: spec.path / "gone.json"))
    result = search(embedded, "naïve café outage", engine, semantic=True)  # not ASCII: `tokenizers` is needed
    assert result.semantic is not None and not result.semantic["used"]
    assert "gone.json" in result.semantic["reason"]
    assert any(note.startswith("meaning off: Cannot read model file") for note in result.notes)
