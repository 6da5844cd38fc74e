"""The model memdex ships (memdex/models/, memdex/query/meaning/packaged.py): built from
../shared's all-MiniLM-L6-v2 by scripts/package_model.py, run offline when no model is named,
its vectors the source's at int8, bit for bit, and named alike."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.errors import MemdexError
from memdex.query.meaning.embed import embed_index, passage_encoder, same_model, vector_model
from memdex.query.meaning.model import PACKAGED_MODEL, load_spec, packaged_path, resolve_model
from memdex.query.meaning.packaged import build, load_packed
from memdex.query.meaning.weights import load_weights
from tests.conftest import shared

pytestmark = pytest.mark.slow


def scifact_texts(count: int) -> list[str]:
    lines = shared("scifact", "corpus.jsonl").read_text(encoding="utf-8").splitlines()[:count]
    return [f"{d['title']}\n{d['text']}" for d in map(json.loads, lines)]


def test_the_packaged_model_is_what_the_tool_builds_from_the_source(minilm: Path, tmp_path: Path) -> None:
    built = tmp_path / PACKAGED_MODEL  # the folder's name is part of the model's (model_name)
    report = build(minilm, built, license_file=packaged_path() / "LICENSE")
    for name in report.files:
        assert (built / name).read_bytes() == (packaged_path() / name).read_bytes(), name
    assert set(report.files) == {
        str(p.relative_to(packaged_path())) for p in packaged_path().rglob("*") if p.is_file()
    }
    assert 55e6 < report.total < 62e6  # docs/model.md says 59 MB
    assert report.name == load_spec(packaged_path()).name == report.source == load_spec(minilm, "int8").name


def test_its_tensors_are_the_source_int8_ones(minilm: Path) -> None:
    source = load_weights(load_spec(minilm, "int8"))
    packed = load_packed(load_spec(packaged_path()))
    for ours, theirs in zip(packed.layers, source.layers, strict=True):
        for name in ("qkv", "attn_out", "up", "down"):
            assert np.array_equal(getattr(ours, name).weight, getattr(theirs, name).weight)
            assert np.array_equal(getattr(ours, name).scale, getattr(theirs, name).scale)
            assert np.array_equal(getattr(ours, name).bias, getattr(theirs, name).bias)
        assert np.array_equal(ours.out_norm, theirs.out_norm)
    assert np.array_equal(packed.position, source.position)
    assert packed.word.dtype == np.float32 and np.array_equal(packed.word, source.word)


@pytest.mark.parametrize("backend", ["numpy", "onnx"])
def test_its_vectors_are_the_source_int8_ones_and_named_alike(minilm: Path, backend: str) -> None:
    "So an index embedded with the source at int8 (the eval's --model) is searched by the packaged one."
    if backend == "onnx":
        pytest.importorskip("onnxruntime")
    texts = [*scifact_texts(40), "Café au lait, naïve résumé: 東京 über alles"]  # non-ASCII: `tokenizers`
    source, packed = load_spec(minilm, "int8"), load_spec(resolve_model(None))
    ours = passage_encoder(packed, backend=backend).encode_passages(texts)
    theirs = passage_encoder(source, backend=backend).encode_passages(texts)
    assert np.array_equal(ours, theirs)
    assert same_model(vector_model(source), packed) and same_model(vector_model(packed), source)


def test_a_packed_model_runs_at_int8_only() -> None:
    with pytest.raises(MemdexError, match="packed at int8 and cannot run at fp32"):
        load_spec(packaged_path(), "fp32")
    with pytest.raises(MemdexError, match="packed at int8"):
        load_spec(packaged_path()).at("fp32")


NOTES = {
    "deploy.md": "# Deploy keys\n\nRotate the deploy key every ninety days; the old one is revoked after the switch.\n",
    "garden.md": "# Tomatoes\n\nWater the tomato beds at dawn and stake the tall plants before July.\n",
    "money.md": "# Budget\n\nThe quarterly budget review moved to the first Monday of the month.\n",
}


PARAPHRASE = "when should vegetables in the garden get their water"  # shares no word with garden.md


def _notes(folder: Path) -> Path:
    folder.mkdir()
    for name, text in NOTES.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def test_embed_with_no_model_runs_the_packaged_one_and_a_paraphrase_finds_the_note(tmp_path: Path) -> None:
    notes = _notes(tmp_path / "notes")
    db = str(tmp_path / "notes.db")
    runner = CliRunner()
    done = runner.invoke(cli, ["--db", db, "index", str(notes)], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    done = runner.invoke(cli, ["--db", db, "embed", "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    report = json.loads(done.output)
    assert report["model"].startswith(load_spec(packaged_path()).name + "@")
    assert report["embedded"] == len(NOTES)
    query = PARAPHRASE
    done = runner.invoke(cli, ["--db", db, "search", query, "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    found = json.loads(done.output)
    assert found["semantic"]["used"] is True
    assert found["results"][0]["path"].endswith("garden.md")


def test_embed_with_no_model_keeps_the_model_the_index_has(minilm: Path, sample: sqlite3.Connection) -> None:
    "An index embedded before the model was packaged is not embedded again by a plain `memdex embed`."
    first = embed_index(sample, str(minilm), precision="fp32", coverage="first")
    assert first.embedded > 0
    again = embed_index(sample)  # no model: the index's own, at its precision: nothing to embed
    assert again.model == first.model and again.embedded == 0 and again.reused == 0


def test_an_index_embedded_with_the_full_model_keeps_meaning_when_that_folder_is_gone(
    minilm: Path, tmp_path: Path
) -> None:
    "Its vectors are the packaged model's own: a cleared hub cache or a deleted folder costs nothing."
    import shutil

    model = tmp_path / "all-MiniLM-L6-v2"
    shutil.copytree(minilm, model)
    notes = _notes(tmp_path / "notes")
    db = str(tmp_path / "notes.db")
    runner = CliRunner()
    assert runner.invoke(cli, ["--db", db, "index", str(notes)], catch_exceptions=False).exit_code == 0
    done = runner.invoke(cli, ["--db", db, "embed", "--model", str(model), "--precision", "int8", "--json"])
    assert done.exit_code == 0 and json.loads(done.output)["embedded"] == len(NOTES), done.output
    shutil.rmtree(model)
    query = PARAPHRASE
    done = runner.invoke(cli, ["--db", db, "search", query, "--json"], catch_exceptions=False)
    found = json.loads(done.output)
    assert found["semantic"]["used"] is True, found["notes"]
    assert found["results"][0]["path"].endswith("garden.md")
    # vectors of another precision are not the packaged model's: the folder is still missed
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE embedding_models SET name = replace(name, '-int8@', '@')")  # fp32's name
    done = runner.invoke(cli, ["--db", db, "search", query, "--json"], catch_exceptions=False)
    found = json.loads(done.output)
    assert found["semantic"]["used"] is False
    assert any("no longer at" in note for note in found["notes"]), found["notes"]
    with conn:
        conn.execute("UPDATE embedding_models SET name = replace(name, '@', '-int8@')")
    conn.close()
    # `memdex embed` then keeps the vectors, and records where the model now is
    again = json.loads(runner.invoke(cli, ["--db", db, "embed", "--json"], catch_exceptions=False).output)
    assert again["embedded"] == 0 and again["model"].startswith(load_spec(packaged_path()).name + "@")
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT source FROM embedding_models").fetchone()[0] == str(packaged_path())
