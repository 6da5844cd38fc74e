"""The sentence-embedding encoder against the real all-MiniLM-L6-v2 files: parity with
sentence-transformers, both backends agreeing, and clear errors for missing or foreign models."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from memdex.errors import InvalidParameter, MemdexError
from memdex.query.meaning.encoder import Encoder, onnxruntime_available
from memdex.query.meaning.model import (
    BGE_QUERY_INSTRUCTION,
    MODEL_ENV,
    ModelSpec,
    default_prefixes,
    load_spec,
    resolve_model,
)

SMALL_FILES = [
    "config.json",
    "tokenizer.json",
    "modules.json",
    "1_Pooling/config.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
]
# sentence-transformers 2.x, all-MiniLM-L6-v2, "This is an example sentence": the first five numbers
REFERENCE = [0.0677, 0.0635, 0.0487, 0.0793, 0.0374]
BACKENDS = [
    "numpy",
    pytest.param("onnx", marks=pytest.mark.skipif(not onnxruntime_available(), reason="no onnxruntime")),
]


@pytest.fixture(scope="module")
def spec(minilm: Path) -> ModelSpec:
    "fp32: sentence-transformers' own numbers are fp32's (int8 has tests/test_encoder_int8.py)"
    return load_spec(minilm, precision="fp32")


@pytest.fixture(scope="module", params=BACKENDS)
def encoder(request: pytest.FixtureRequest, spec: ModelSpec) -> Iterator[Encoder]:
    yield Encoder(spec, backend=request.param)


def copy_small_files(model: Path, target: Path) -> Path:
    "The model folder without its weights, writable"
    for name in SMALL_FILES:
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(model / name, target / name)
    return target


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


def test_spec_reads_the_model_files(minilm: Path, spec: ModelSpec) -> None:
    assert (spec.dim, spec.max_length, spec.pooling, spec.normalize) == (384, 256, "mean", True)
    assert (spec.num_layers, spec.num_heads, spec.do_lower_case) == (6, 12, False)
    assert (spec.query_prefix, spec.passage_prefix) == ("", "")
    assert spec.name.startswith("all-MiniLM-L6-v2-")
    assert load_spec(minilm, precision="fp32").name == spec.name  # the same files give the same name


def test_matches_sentence_transformers(encoder: Encoder) -> None:
    vector = encoder.encode_passages(["This is an example sentence"])
    assert vector.shape == (1, 384) and vector.dtype == np.float32
    assert vector[0, :5] == pytest.approx(REFERENCE, abs=1e-3)


@pytest.mark.slow
def test_vectors_are_normalised_and_keep_input_order(encoder: Encoder) -> None:
    texts = ["short", "a much longer text " * 15, "", "medium length text about sqlite full-text search"] * 3
    together = encoder.encode_passages(texts)
    assert together.shape == (len(texts), 384)
    assert np.linalg.norm(together, axis=1) == pytest.approx(np.ones(len(texts)), abs=1e-5)
    one_by_one = np.concatenate([encoder.encode_passages([text]) for text in texts[:4]])
    assert cosine(together[:4], one_by_one).min() > 0.9999  # padding in a batch changes nothing
    assert cosine(together[:4], together[4:8]).min() > 0.9999


def test_empty_input_gives_no_vectors(encoder: Encoder) -> None:
    assert encoder.encode_queries([]).shape == (0, 384)


@pytest.mark.slow
def test_paraphrase_is_closer_than_an_unrelated_sentence(encoder: Encoder) -> None:
    query = encoder.encode_queries(["How do I back up the search index?"])[0]
    paraphrase, unrelated = encoder.encode_passages(
        ["Making a backup copy of the search database", "The cat slept on the warm windowsill all afternoon"]
    )
    assert query @ paraphrase > query @ unrelated + 0.2


@pytest.mark.slow
@pytest.mark.skipif(not onnxruntime_available(), reason="no onnxruntime")
def test_numpy_and_onnx_backends_agree(spec: ModelSpec) -> None:
    texts = ["This is an example sentence", "word " * 300, "Ünïcödé and emoji 🙂 survive tokenising", "x"]
    numpy_vectors = Encoder(spec, backend="numpy").encode_passages(texts)
    onnx_vectors = Encoder(spec, backend="onnx", threads=1, batch_size=3).encode_passages(texts)
    assert cosine(numpy_vectors, onnx_vectors).min() > 0.9999


@pytest.mark.slow
def test_auto_picks_onnx_when_onnxruntime_is_installed(spec: ModelSpec) -> None:
    assert Encoder(spec).backend == ("onnx" if onnxruntime_available() else "numpy")


def test_missing_weights_are_named(minilm: Path, tmp_path: Path) -> None:
    folder = copy_small_files(minilm, tmp_path)
    with pytest.raises(MemdexError, match="model.safetensors"):
        load_spec(folder)


def test_unsupported_architecture_is_named(minilm: Path, tmp_path: Path) -> None:
    folder = copy_small_files(minilm, tmp_path)
    (folder / "model.safetensors").symlink_to(minilm / "model.safetensors")
    config = json.loads((folder / "config.json").read_text())
    config.update(model_type="xlm-roberta", architectures=["XLMRobertaModel"])
    (folder / "config.json").write_text(json.dumps(config))
    with pytest.raises(MemdexError, match="xlm-roberta") as caught:
        load_spec(folder)
    assert "bert" in str(caught.value)


def test_e5_and_bge_get_their_prefixes(minilm: Path, tmp_path: Path) -> None:
    folder = copy_small_files(minilm, tmp_path / "e5-small-v2")
    (folder / "model.safetensors").symlink_to(minilm / "model.safetensors")
    spec = load_spec(folder)
    assert (spec.query_prefix, spec.passage_prefix) == ("query: ", "passage: ")
    assert spec.name != load_spec(minilm).name
    assert default_prefixes("BAAI/bge-small-en-v1.5") == (BGE_QUERY_INSTRUCTION, "")
    assert default_prefixes("thenlper/gte-small") == ("", "")
    assert default_prefixes("intfloat/multilingual-e5-small") == ("query: ", "passage: ")


def test_prompts_in_the_model_files_win(minilm: Path, tmp_path: Path) -> None:
    folder = copy_small_files(minilm, tmp_path / "e5-small-v2")
    (folder / "model.safetensors").symlink_to(minilm / "model.safetensors")
    prompts = {"prompts": {"query": "Q: ", "document": "D: "}}
    (folder / "config_sentence_transformers.json").write_text(json.dumps(prompts))
    spec = load_spec(folder)
    assert (spec.query_prefix, spec.passage_prefix) == ("Q: ", "D: ")


def test_resolve_model_takes_a_folder_as_is(minilm: Path) -> None:
    assert resolve_model(str(minilm)) == minilm


def test_unknown_hub_model_offline_says_how_to_point_at_a_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("huggingface_hub")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path))
    with pytest.raises(MemdexError, match=MODEL_ENV) as caught:
        resolve_model("memdex-tests/no-such-model")
    assert "memdex-tests/no-such-model" in str(caught.value)


def test_model_module_does_not_import_numpy() -> None:
    "Reading a model's description stays cheap: numpy loads only with the encoder"
    code = "import sys, memdex.query.meaning.model; assert 'numpy' not in sys.modules, 'numpy imported'"
    subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parents[1], check=True)


@pytest.mark.slow
def test_hub_name_found_in_the_cache_offline_gets_the_folders_name(minilm: Path, tmp_path: Path) -> None:
    "A model in the Hugging Face cache resolves without the network and keys vectors like its folder"
    pytest.importorskip("huggingface_hub")
    repo = tmp_path / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2"
    commit = "0" * 40
    copy_small_files(minilm, repo / "snapshots" / commit)
    (repo / "snapshots" / commit / "model.safetensors").symlink_to(minilm / "model.safetensors")
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    code = (
        "from memdex.query.meaning.model import load_spec, resolve_model; "
        "print(load_spec(resolve_model('sentence-transformers/all-MiniLM-L6-v2')).name)"
    )
    env = {**os.environ, "HF_HOME": str(tmp_path), "HF_HUB_OFFLINE": "1"}
    env.pop("HF_HUB_CACHE", None)
    found = subprocess.run(
        [sys.executable, "-c", code],
        cwd=Path(__file__).parents[1],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert found.stdout.strip() == load_spec(minilm).name


def test_bad_options_are_refused_before_loading(spec: ModelSpec) -> None:
    with pytest.raises(InvalidParameter, match="torch"):
        Encoder(spec, backend="torch")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameter, match="batch size"):
        Encoder(spec, batch_size=0)


def test_one_string_is_not_taken_for_a_list_of_characters(encoder: Encoder) -> None:
    with pytest.raises(InvalidParameter, match="sequence of texts"):
        encoder.encode_queries("backup")
