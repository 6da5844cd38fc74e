"""The encoder's int8 path, its weights and its batches (issue 30), against the real
all-MiniLM-L6-v2 files and a tiny BERT written here (CLS pooling, e5 prefixes, 512 pieces).

int8 quantises each token's activations on their own, so a text's vector never depends on the
texts it runs with; fp32 weights are memory-mapped and give the same bits as loading the file
whole did; the int8 weights are made once and kept, keyed by the model."""

from __future__ import annotations

import json
import math
import shutil
import sqlite3
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.errors import InvalidParameter, MemdexError
from memdex.query.meaning import weights as weights_module
from memdex.query.meaning.encoder import Encoder, batches, forward_numpy, onnxruntime_available
from memdex.query.meaning.model import DEFAULT_PRECISION, ModelSpec, cache_dir, load_spec, precision_of
from memdex.query.meaning.weights import (
    BertWeights,
    LayerWeights,
    Linear,
    linears_places,
    load_weights,
    read_safetensors,
    write_safetensors,
)

from .conftest import shared

BACKEND_NAMES = ["numpy", *(["onnx"] if onnxruntime_available() else [])]
# Sixteen texts of one length in word pieces (one colour each): they share a model run.
SAME_LENGTH = [f"The {colour} deploy key was rotated after the outage review" for colour in (
    "red", "blue", "green", "black", "white", "brown", "pink", "gray",
    "orange", "purple", "yellow", "silver", "gold", "dark", "pale", "bright",
)]  # fmt: skip


@pytest.fixture(scope="module")
def int8(minilm: Path) -> dict[str, Encoder]:
    "The int8 encoder of each backend, reading 128 word pieces as embed does"
    spec = replace(load_spec(minilm, precision="int8"), max_length=128)
    return {backend: Encoder(spec, backend=backend) for backend in BACKEND_NAMES}


@pytest.fixture(scope="module")
def real_texts() -> list[str]:
    return serena_texts(12)


@pytest.fixture(scope="module")
def fp32_vectors(minilm: Path, real_texts: list[str]) -> np.ndarray:
    spec = replace(load_spec(minilm, precision="fp32"), max_length=128)
    return Encoder(spec, backend="numpy").encode_passages(real_texts)


def serena_texts(count: int) -> list[str]:
    "Real memory texts, cut where embed cuts a chunk (2,000 characters)"
    files = sorted(shared("serena-memories").rglob("*.md"))[:count]
    return [file.read_text(encoding="utf-8", errors="replace")[:2000] for file in files]


def cosine(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return (a * b).sum(axis=1) / np.linalg.norm(a, axis=1) / np.linalg.norm(b, axis=1)


# ---------------------------------------------------------------------------------------------
# int8


def test_a_text_gets_the_same_vector_alone_and_among_sixteen_others(int8: dict[str, Encoder]) -> None:
    """Per-row steps and runs of one length: its batch-mates change nothing, to the last bit.
    With one step per batch (as DynamicQuantizeLinear takes it) the loudest text of a batch
    sets every text's step: this text's vector moved by 0.022 (cosine 0.990). Padding could
    move one too: numpy's BLAS summed a padded batch in another order, and a rounding tipped
    (0.022 for 1 text in 11)."""
    mixed = [*SAME_LENGTH[1:], "short", "a much longer text about the watcher and its batches " * 5]
    for encoder in int8.values():
        for text in (SAME_LENGTH[0], mixed[-1]):
            alone = encoder.encode_passages([text])[0]
            among = encoder.encode_passages([*mixed[:8], text, *mixed[8:]])[8]
            assert np.abs(alone - among).max() <= 1e-6


@pytest.mark.slow
def test_int8_stays_close_to_fp32_on_real_texts(
    int8: dict[str, Encoder], real_texts: list[str], fp32_vectors: np.ndarray
) -> None:
    """Over 1,000 Serena chunks the cosine to fp32 was at least 0.995, 0.998 on average (per
    tensor weights: 0.91). numpy and onnxruntime run the same int8 arithmetic: a linear layer
    gives the same bits in both, and the whole model differs only as far as fp32's own small
    differences (LayerNorm, GELU) tip a rounding the other way."""
    vectors = {backend: encoder.encode_passages(real_texts) for backend, encoder in int8.items()}
    for found in vectors.values():
        similarity = cosine(found, fp32_vectors)
        assert similarity.min() > 0.99 and similarity.mean() > 0.995
    if len(vectors) == 2:
        assert cosine(vectors["numpy"], vectors["onnx"]).min() > 0.99


def test_threads_and_batch_sizes_change_nothing_but_speed(int8: dict[str, Encoder]) -> None:
    encoder = int8[BACKEND_NAMES[-1]]
    texts = [*SAME_LENGTH[:6], "short", "x", "a longer text about sqlite full-text search " * 3]
    vectors = {}
    for threads, batch_size in ((1, None), (2, None), (1, 1), (2, 3)):
        encoder.threads, encoder.batch_size = threads, batch_size
        vectors[threads, batch_size] = encoder.encode_passages(texts)
    encoder.threads, encoder.batch_size = None, None
    one = vectors[1, None]
    assert all(np.array_equal(other, one) for other in vectors.values())


def test_batches_hold_one_length_each_longest_first() -> None:
    lengths = [5, 100, 5, 7, 100, 5, 300]
    assert batches(lengths) == [[6], [1, 4], [3], [0, 2, 5]]
    assert batches(lengths, batch_size=2) == [[6], [1, 4], [3], [0, 2], [5]]
    assert batches([128] * 5) == [[0, 1], [2, 3], [4]]  # about 256 word pieces a run
    assert batches([]) == []


# ---------------------------------------------------------------------------------------------
# Weights


def test_int8_weights_are_kept_in_the_cache_folder_and_reused(
    minilm: Path, tmp_path: Path, own_cache: Path
) -> None:
    "The model's folder is read-only (the session's copy of it): the int8 copy goes to memdex's cache folder"
    spec = load_spec(minilm, precision="int8")
    first = load_weights(spec)
    (kept,) = (cache_dir() / "models").iterdir()
    assert kept.name.startswith("memdex-int8-") and not (minilm / kept.name).exists()
    stamp = kept.stat().st_mtime_ns
    again = load_weights(spec)
    assert kept.stat().st_mtime_ns == stamp  # read, not made again
    layer = again.layers[0].up
    assert layer.weight.dtype == np.int8 and layer.scale is not None and not layer.weight.flags.writeable
    assert np.array_equal(layer.weight, first.layers[0].up.weight)
    assert np.abs(layer.weight).max() == 127  # each column's largest weight is ±127
    fp32_up = load_weights(replace(spec, precision="fp32")).layers[0].up.weight
    assert np.abs(layer.weight * layer.scale - fp32_up).max() <= layer.scale.max() / 2 + 1e-7


@pytest.mark.slow
def test_fp32_weights_are_mapped_and_equal_to_loading_the_file_whole(minilm: Path, own_cache: Path) -> None:
    """Every number as safetensors' own loader and a copy gave (the code before issue 30), the
    word embeddings a read-only view of the file, the linear weights arranged once and mapped
    from memdex's cache folder after, and a query's vector the same bits."""
    from safetensors.numpy import load_file
    from threadpoolctl import threadpool_limits
    from tokenizers import Tokenizer

    spec = load_spec(minilm, precision="fp32")
    made = load_weights(spec)
    (kept,) = (cache_dir() / "models").iterdir()
    assert kept.name.startswith("memdex-fp32-") and not (minilm / kept.name).exists()
    stamp = kept.stat().st_mtime_ns
    mapped = load_weights(spec)
    assert kept.stat().st_mtime_ns == stamp  # read, not made again
    reference = _copied_weights(load_file(str(spec.weights_file)), spec)
    assert not mapped.word.flags.writeable and not mapped.word.flags.owndata
    assert np.array_equal(mapped.word, reference.word) and np.array_equal(mapped.position, reference.position)
    for ours, first, theirs in zip(mapped.layers, made.layers, reference.layers, strict=True):
        for name in ("qkv", "attn_out", "up", "down"):
            mine, other = getattr(ours, name), getattr(theirs, name)
            assert not mine.weight.flags.writeable and not mine.weight.flags.owndata  # a view of the copy
            assert mine.weight.flags.c_contiguous and np.array_equal(mine.weight, other.weight)
            assert np.array_equal(getattr(first, name).weight, other.weight)
            assert np.array_equal(mine.bias, other.bias)
    tokenizer = Tokenizer.from_file(str(spec.tokenizer_file))
    with threadpool_limits(limits=1, user_api="blas"):  # as a search runs it (and fast on a busy machine)
        for query in ("how do I stop hooks from running on windows", "flaky tests in CI", "x", ""):
            ids = np.array([tokenizer.encode(query).ids])
            mask = np.ones_like(ids)
            assert np.array_equal(
                forward_numpy(reference, spec, ids, mask), forward_numpy(mapped, spec, ids, mask)
            )


def _copied_weights(raw: dict[str, np.ndarray], spec: ModelSpec) -> BertWeights:
    "What load_weights built before issue 30: every tensor copied, linear weights transposed"

    def linear(name: str) -> tuple[np.ndarray, np.ndarray]:
        return np.ascontiguousarray(raw[f"{name}.weight"].T), raw[f"{name}.bias"]

    scale = np.float32(1.0 / math.sqrt(spec.dim // spec.num_heads))
    layers = []
    for index in range(spec.num_layers):
        prefix = f"encoder.layer.{index}"
        query, query_bias = linear(f"{prefix}.attention.self.query")
        key, key_bias = linear(f"{prefix}.attention.self.key")
        value, value_bias = linear(f"{prefix}.attention.self.value")
        layers.append(
            LayerWeights(
                qkv=Linear(
                    np.concatenate([query * scale, key, value], axis=1),
                    np.concatenate([query_bias * scale, key_bias, value_bias]),
                ),
                attn_out=Linear(*linear(f"{prefix}.attention.output.dense")),
                attn_norm=raw[f"{prefix}.attention.output.LayerNorm.weight"],
                attn_norm_bias=raw[f"{prefix}.attention.output.LayerNorm.bias"],
                up=Linear(*linear(f"{prefix}.intermediate.dense")),
                down=Linear(*linear(f"{prefix}.output.dense")),
                out_norm=raw[f"{prefix}.output.LayerNorm.weight"],
                out_norm_bias=raw[f"{prefix}.output.LayerNorm.bias"],
            )
        )
    return BertWeights(
        word=raw["embeddings.word_embeddings.weight"],
        position=raw["embeddings.position_embeddings.weight"]
        + raw["embeddings.token_type_embeddings.weight"][0],
        norm=raw["embeddings.LayerNorm.weight"],
        norm_bias=raw["embeddings.LayerNorm.bias"],
        layers=tuple(layers),
    )


# ---------------------------------------------------------------------------------------------
# Another BERT: CLS pooling, e5's prefixes, 512 word pieces, its own tokenizer


TINY_VOCAB = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    ":",
    *"the a deploy key was rotated sqlite search index query passage".split(),
]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    "A 2-layer BERT with random weights, named like e5 (so its prefixes are e5's), in a writable folder"
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    folder = tmp_path_factory.mktemp("models") / "e5-tiny-test"
    (folder / "1_Pooling").mkdir(parents=True)
    vocab = {token: i for i, token in enumerate(TINY_VOCAB)}
    tokenizer = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
    )
    tokenizer.save(str(folder / "tokenizer.json"))
    hidden, inner, layers = 32, 64, 2
    config = {
        "model_type": "bert",
        "architectures": ["BertModel"],
        "hidden_size": hidden,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "intermediate_size": inner,
        "max_position_embeddings": 512,
        "hidden_act": "gelu",
    }
    (folder / "config.json").write_text(json.dumps(config))
    (folder / "sentence_bert_config.json").write_text(json.dumps({"max_seq_length": 512}))
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
        {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"},
    ]
    (folder / "modules.json").write_text(json.dumps(modules))
    (folder / "1_Pooling" / "config.json").write_text(json.dumps({"pooling_mode_cls_token": True}))
    write_safetensors(folder / "model.safetensors", _random_bert(len(vocab), hidden, inner, layers), {})
    return folder


def _random_bert(vocab: int, hidden: int, inner: int, layers: int, seed: int = 7) -> dict[str, np.ndarray]:
    "A BertModel's tensors as torch names them (the bert. prefix of a task model, a position_ids buffer)"
    rng = np.random.default_rng(seed)

    def normal(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.2).astype(np.float32)

    tensors = {
        "bert.embeddings.position_ids": np.arange(512, dtype=np.int64)[None],
        "bert.embeddings.word_embeddings.weight": normal(vocab, hidden),
        "bert.embeddings.position_embeddings.weight": normal(512, hidden),
        "bert.embeddings.token_type_embeddings.weight": normal(2, hidden),
        "bert.embeddings.LayerNorm.weight": 1 + normal(hidden),
        "bert.embeddings.LayerNorm.bias": normal(hidden),
    }
    for index in range(layers):
        prefix = f"bert.encoder.layer.{index}"
        shapes = {
            "attention.self.query": (hidden, hidden),
            "attention.self.key": (hidden, hidden),
            "attention.self.value": (hidden, hidden),
            "attention.output.dense": (hidden, hidden),
            "intermediate.dense": (inner, hidden),
            "output.dense": (hidden, inner),
        }
        for name, shape in shapes.items():
            tensors[f"{prefix}.{name}.weight"] = normal(*shape)
            tensors[f"{prefix}.{name}.bias"] = normal(shape[0])
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[f"{prefix}.{norm}.weight"] = 1 + normal(hidden)
            tensors[f"{prefix}.{norm}.bias"] = normal(hidden)
    return tensors


@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_another_bert_runs_as_its_files_say(tiny_model: Path, precision: str) -> None:
    spec = load_spec(tiny_model, precision=precision)  # type: ignore[arg-type]
    assert (spec.pooling, spec.max_length, spec.normalize) == ("cls", 512, True)
    assert (spec.query_prefix, spec.passage_prefix) == ("query: ", "passage: ")
    encoders = [Encoder(spec, backend="numpy")]
    if onnxruntime_available():
        encoders.append(Encoder(spec, backend="onnx"))
    texts = ["the deploy key was rotated", "sqlite search index " * 200]
    for encoder in encoders:
        vectors = encoder.encode_passages(texts)
        assert np.array_equal(vectors, encoder.encode([f"passage: {text}" for text in texts]))
        assert np.array_equal(encoder.encode_queries(texts[:1]), encoder.encode(["query: " + texts[0]]))
        ids = np.array([encoder._tokenizer.encode("passage: " + texts[1]).ids])
        assert ids.shape[1] == 512  # cut at the model's own length, not MiniLM's 256
        cls = encoder._run(ids, np.ones_like(ids))[0, 0]  # the [CLS] token's hidden state
        assert np.allclose(vectors[1], cls / np.linalg.norm(cls), atol=1e-6)
    if len(encoders) == 2:
        assert cosine(encoders[0].encode_passages(texts), encoders[1].encode_passages(texts)).min() > 0.99


def test_a_changed_model_never_meets_a_stale_int8_copy(
    tiny_model: Path, tmp_path: Path, own_cache: Path
) -> None:
    "Its folder is writable: the copy sits beside the model; new weights give a new copy"
    folder = tmp_path / "e5-tiny-test"
    shutil.copytree(tiny_model, folder)
    spec = load_spec(folder, precision="int8")
    before = load_weights(spec).layers[0].up.weight.copy()
    (kept,) = folder.glob("memdex-int8-[0-9a-f]*.safetensors")
    assert not (cache_dir() / "models").exists()
    write_safetensors(folder / "model.safetensors", _random_bert(len(TINY_VOCAB), 32, 64, 2, seed=8), {})
    changed = load_spec(folder, precision="int8")
    assert changed.identity != spec.identity
    after = load_weights(changed).layers[0].up.weight
    assert not np.array_equal(after, before)
    assert len(list(folder.glob("memdex-int8-[0-9a-f]*.safetensors"))) == 2


def test_a_truncated_int8_copy_is_made_again(tiny_model: Path, tmp_path: Path) -> None:
    folder = tmp_path / "e5-tiny-test"
    shutil.copytree(tiny_model, folder)
    spec = load_spec(folder, precision="int8")
    good = load_weights(spec).layers[1].down.weight.copy()
    kept = linears_places(spec)[0]
    kept.write_bytes(kept.read_bytes()[:1000])
    assert np.array_equal(load_weights(spec).layers[1].down.weight, good)
    assert read_safetensors(kept)[1]["format"] == weights_module.INT8_FORMAT  # whole again


def test_a_broken_weights_file_is_named(tmp_path: Path, tiny_model: Path) -> None:
    folder = tmp_path / "e5-tiny-test"
    shutil.copytree(tiny_model, folder)
    (folder / "model.safetensors").write_bytes((folder / "model.safetensors").read_bytes()[:5000])
    with pytest.raises(MemdexError, match=r"Cannot read model file .*model.safetensors"):
        load_weights(load_spec(folder, precision="fp32"))


# ---------------------------------------------------------------------------------------------
# The precision in names, and `memdex embed --precision`


def test_the_precision_is_part_of_the_name_vectors_are_stored_under(minilm: Path) -> None:
    fp32_spec, int8_spec = load_spec(minilm, precision="fp32"), load_spec(minilm, precision="int8")
    assert int8_spec.name == fp32_spec.name + "-int8"  # fp32 names are those of before int8
    assert int8_spec.identity == fp32_spec.identity == fp32_spec.name
    assert precision_of(int8_spec.name + "@128") == precision_of(int8_spec.name + "@128w") == "int8"
    assert precision_of(fp32_spec.name + "@128") == "fp32"
    with pytest.raises(InvalidParameter, match="Unknown precision 'int4'; use one of int8, fp32"):
        load_spec(minilm, precision="int4")  # type: ignore[arg-type]


@pytest.fixture
def notes(tmp_path: Path, db_path: Path) -> Iterator[Path]:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "outage.md").write_text("# Retro\n\nSearch returned nothing for two hours after the deploy.\n")
    (folder / "keys.md").write_text("# Keys\n\nThe deploy key is rotated every ninety days.\n")
    result = CliRunner().invoke(
        cli, ["--db", str(db_path), "index", "-q", str(folder)], catch_exceptions=False
    )
    assert result.exit_code == 0, result.output
    yield folder


@pytest.mark.slow
@pytest.mark.parametrize("precision", ["int8", "fp32"])
def test_embed_records_the_precision_it_ran_at(
    minilm: Path, notes: Path, db_path: Path, precision: str
) -> None:
    args = ["--db", str(db_path), "embed", "--model", str(minilm), "--json"]
    if precision != DEFAULT_PRECISION:
        args += ["--precision", precision]
    result = CliRunner().invoke(cli, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    model = json.loads(result.stdout)["model"]
    assert precision_of(model) == precision
    conn = sqlite3.connect(db_path)
    assert {row[0] for row in conn.execute("SELECT DISTINCT model FROM chunk_vectors")} == {model}
    chunks = conn.execute("SELECT count(*) FROM chunks").fetchone()[0]
    dropped = CliRunner().invoke(
        cli,
        ["--db", str(db_path), "embed", "--drop", "--model", str(minilm), "--json"],
        catch_exceptions=False,
    )
    assert dropped.exit_code == 0 and json.loads(dropped.stdout)["dropped"] == chunks  # either precision's
    assert conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0] == 0
    conn.close()


def test_embed_refuses_an_unknown_precision(notes: Path, db_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(db_path), "embed", "--precision", "int4"])
    assert result.exit_code == 2 and "'int4' is not one of 'int8', 'fp32'" in result.output


def test_an_index_keeps_its_precision_and_coverage_when_the_defaults_change(
    minilm: Path, notes: Path, db_path: Path
) -> None:
    "Embedded at fp32, first, before the defaults became int8, whole: a new note is embedded as the rest"
    base = ["--db", str(db_path), "embed", "--model", str(minilm), "--json"]
    first = CliRunner().invoke(
        cli, [*base, "--precision", "fp32", "--coverage", "first"], catch_exceptions=False
    )
    assert first.exit_code == 0, first.output
    model = json.loads(first.stdout)["model"]
    assert precision_of(model) == "fp32" and model.endswith("@128")
    (notes / "later.md").write_text("# Later\n\nThe standby region took over in four minutes.\n")
    CliRunner().invoke(cli, ["--db", str(db_path), "index", "-q", str(notes)], catch_exceptions=False)
    again = CliRunner().invoke(cli, base, catch_exceptions=False)
    assert again.exit_code == 0, again.output
    report = json.loads(again.stdout)
    assert report["model"] == model and report["embedded"] == 1  # not the whole index again
    fresh = CliRunner().invoke(cli, [*base, "--drop"], catch_exceptions=False)
    assert fresh.exit_code == 0
    made = json.loads(CliRunner().invoke(cli, base, catch_exceptions=False).stdout)["model"]
    assert precision_of(made) == DEFAULT_PRECISION == "int8" and made.endswith(
        "@128w"
    )  # a new index's defaults


def test_numpy_reads_int8_weights_widened_from_a_kept_copy(tiny_model: Path, tmp_path: Path) -> None:
    "The int8 values as float32, kept once beside the model: mapped, equal to widening them in memory"
    folder = tmp_path / "e5-tiny-test"
    shutil.copytree(tiny_model, folder)
    spec = load_spec(folder, precision="int8")
    int8 = load_weights(spec)
    widened = load_weights(spec, widened=True)
    (kept,) = folder.glob("memdex-int8-widened-*.safetensors")
    again = load_weights(spec, widened=True)
    for ours, theirs, first in zip(again.layers, int8.layers, widened.layers, strict=True):
        for name in ("qkv", "attn_out", "up", "down"):
            mine, other = getattr(ours, name), getattr(theirs, name)
            assert mine.weight.dtype == np.float32 and not mine.weight.flags.writeable  # mapped
            assert np.array_equal(mine.weight, other.weight.astype(np.float32))
            assert np.array_equal(mine.scale, other.scale) and np.array_equal(
                getattr(first, name).weight, mine.weight
            )
    assert read_safetensors(kept)[1]["format"] == weights_module.WIDENED_FORMAT
    texts = ["flaky tests in CI", "x", ""]
    quick = Encoder(spec, backend="numpy").encode_queries(texts)
    in_memory = Encoder(spec, backend="numpy")
    kept.unlink()
    kept.write_bytes(b"not a safetensors file")  # broken: widened again, in memory or saved anew
    assert np.array_equal(in_memory.encode_queries(texts), quick)
    assert np.array_equal(Encoder(spec, backend="numpy").encode_queries(texts), quick)
