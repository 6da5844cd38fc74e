"""Turn texts into sentence vectors with a BERT-family model, without torch.

Two interchangeable backends run the same weights: a plain numpy forward pass, and an ONNX
graph built here from those weights and run by onnxruntime when it is installed (about twice
as fast on two cores, mostly because it spreads the elementwise work over them as well). The
graph is written as ONNX protobuf bytes directly, so the ``onnx`` package is not needed; it is
rebuilt at each start in about 0.06 s, and onnxruntime takes about 0.3 s more to load it.
"""

from __future__ import annotations

import importlib.util
import math
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from memdex.errors import InvalidParameter, MemdexError
from memdex.query.meaning.model import ModelSpec

if TYPE_CHECKING:
    from tokenizers import Tokenizer

Backend = Literal["auto", "numpy", "onnx"]
BACKENDS: tuple[str, ...] = ("auto", "numpy", "onnx")
FloatArray = NDArray[np.float32]
IntArray = NDArray[np.int64]
# Added to attention scores at padding positions: exp() of it is exactly 0 in float32.
_MASKED = -1e9


# ---------------------------------------------------------------------------------------------
# Weights


@dataclass(frozen=True)
class LayerWeights:
    "One encoder layer, linear weights stored (in, out) and the query part pre-scaled"

    qkv: FloatArray  # (hidden, 3 * hidden): query, key and value side by side
    qkv_bias: FloatArray
    attn_out: FloatArray  # (hidden, hidden)
    attn_out_bias: FloatArray
    attn_norm: FloatArray  # LayerNorm weight
    attn_norm_bias: FloatArray
    up: FloatArray  # (hidden, intermediate)
    up_bias: FloatArray
    down: FloatArray  # (intermediate, hidden)
    down_bias: FloatArray
    out_norm: FloatArray
    out_norm_bias: FloatArray


@dataclass(frozen=True)
class BertWeights:
    "The tensors of a BERT encoder, arranged for the forward pass"

    word: FloatArray  # (vocabulary, hidden)
    position: FloatArray  # (positions, hidden), token type 0 already added: one sentence per text
    norm: FloatArray
    norm_bias: FloatArray
    layers: tuple[LayerWeights, ...]


def _canonical(name: str) -> str:
    "A tensor name without the task-head prefix and with old LayerNorm names made current"
    name = name.removeprefix("bert.")
    if name.endswith("LayerNorm.gamma"):
        return name.removesuffix("gamma") + "weight"
    if name.endswith("LayerNorm.beta"):
        return name.removesuffix("beta") + "bias"
    return name


def load_weights(spec: ModelSpec) -> BertWeights:
    "Read model.safetensors into BertWeights (float32), or say which tensor is missing"
    from safetensors.numpy import load_file

    file = spec.weights_file
    try:
        raw = {_canonical(name): array for name, array in load_file(str(file)).items()}
    except Exception as error:  # a truncated download, or not a safetensors file
        raise MemdexError(f"Cannot read model file {file}: {error}") from None

    def tensor(name: str) -> FloatArray:
        if name not in raw:
            raise MemdexError(f"Model file {file} has no tensor {name!r}; is it a BERT model?")
        return np.ascontiguousarray(raw.pop(name), dtype=np.float32)

    def linear(name: str) -> tuple[FloatArray, FloatArray]:
        "A torch Linear's (out, in) weight turned to (in, out), and its bias"
        return np.ascontiguousarray(tensor(f"{name}.weight").T), tensor(f"{name}.bias")

    scale = np.float32(1.0 / math.sqrt(spec.dim // spec.num_heads))
    layers = []
    for index in range(spec.num_layers):
        prefix = f"encoder.layer.{index}"
        query, query_bias = linear(f"{prefix}.attention.self.query")
        key, key_bias = linear(f"{prefix}.attention.self.key")
        value, value_bias = linear(f"{prefix}.attention.self.value")
        attn_out, attn_out_bias = linear(f"{prefix}.attention.output.dense")
        up, up_bias = linear(f"{prefix}.intermediate.dense")
        down, down_bias = linear(f"{prefix}.output.dense")
        layers.append(
            LayerWeights(
                qkv=np.concatenate([query * scale, key, value], axis=1),
                qkv_bias=np.concatenate([query_bias * scale, key_bias, value_bias]),
                attn_out=attn_out,
                attn_out_bias=attn_out_bias,
                attn_norm=tensor(f"{prefix}.attention.output.LayerNorm.weight"),
                attn_norm_bias=tensor(f"{prefix}.attention.output.LayerNorm.bias"),
                up=up,
                up_bias=up_bias,
                down=down,
                down_bias=down_bias,
                out_norm=tensor(f"{prefix}.output.LayerNorm.weight"),
                out_norm_bias=tensor(f"{prefix}.output.LayerNorm.bias"),
            )
        )
    word = tensor("embeddings.word_embeddings.weight")
    if word.shape[1] != spec.dim:
        raise MemdexError(
            f"Model file {file}: embeddings have {word.shape[1]} dimensions, config says {spec.dim}"
        )
    position = (
        tensor("embeddings.position_embeddings.weight") + tensor("embeddings.token_type_embeddings.weight")[0]
    )
    return BertWeights(
        word=word,
        position=position,
        norm=tensor("embeddings.LayerNorm.weight"),
        norm_bias=tensor("embeddings.LayerNorm.bias"),
        layers=tuple(layers),
    )


# ---------------------------------------------------------------------------------------------
# The numpy backend

# Abramowitz and Stegun 7.1.26: erf to within 1.5e-7, below float32's own rounding of GELU.
_ERF_P = np.float32(0.3275911)
_ERF_A = tuple(np.float32(a) for a in (1.061405429, -1.453152027, 1.421413741, -0.284496736, 0.254829592))
_INV_SQRT2 = np.float32(1 / math.sqrt(2))


def _gelu_(x: FloatArray) -> None:
    "x * (1 + erf(x / sqrt 2)) / 2, in place"
    z = np.abs(x)
    z *= _INV_SQRT2
    t = _ERF_P * z
    t += 1
    np.reciprocal(t, out=t)
    poly = _ERF_A[0] * t
    for coefficient in _ERF_A[1:]:
        poly += coefficient
        poly *= t
    np.square(z, out=z)
    np.negative(z, out=z)
    np.exp(z, out=z)
    poly *= z  # now 1 - erf(|x| / sqrt 2)
    poly *= 0.5
    x *= np.where(x >= 0, 1 - poly, poly)


def _layer_norm(x: FloatArray, weight: FloatArray, bias: FloatArray, eps: float) -> FloatArray:
    centred = x - x.mean(axis=-1, keepdims=True)
    variance = np.mean(np.square(centred), axis=-1, keepdims=True)
    centred *= 1 / np.sqrt(variance + np.float32(eps))
    centred *= weight
    centred += bias
    return centred


def _gelu_rows_(x: FloatArray, rows: int = 64) -> None:
    "GELU in place a few rows at a time: its many passes then run in cache, not memory"
    for start in range(0, x.shape[0], rows):
        _gelu_(x[start : start + rows])


def forward_numpy(weights: BertWeights, spec: ModelSpec, ids: IntArray, mask: IntArray) -> FloatArray:
    "The last hidden states, (batch, tokens, hidden), of a padded batch"
    batch, width = ids.shape
    heads = spec.num_heads
    eps = spec.layer_norm_eps
    x = weights.word[ids.reshape(-1)]  # one row per token: the linear layers are then one matrix product
    x += np.tile(weights.position[:width], (batch, 1))
    x = _layer_norm(x, weights.norm, weights.norm_bias, eps)
    padding = ((1 - mask) * _MASKED).astype(np.float32)[:, None, None, :]
    for layer in weights.layers:
        qkv = x @ layer.qkv
        qkv += layer.qkv_bias
        query, key, value = qkv.reshape(batch, width, 3, heads, -1).transpose(2, 0, 3, 1, 4)
        scores = query @ key.transpose(0, 1, 3, 2)
        scores += padding
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch * width, -1)
        attended = context @ layer.attn_out
        attended += layer.attn_out_bias
        attended += x
        x = _layer_norm(attended, layer.attn_norm, layer.attn_norm_bias, eps)
        inner = x @ layer.up
        inner += layer.up_bias
        _gelu_rows_(inner)
        out: FloatArray = np.matmul(inner, layer.down)
        out += layer.down_bias
        out += x
        x = _layer_norm(out, layer.out_norm, layer.out_norm_bias, eps)
    return x.reshape(batch, width, -1)


# ---------------------------------------------------------------------------------------------
# The ONNX backend: protobuf written by hand (field numbers from onnx.proto)

_Chunks = list[bytes | memoryview]
_FLOAT, _INT64 = 1, 7  # TensorProto.DataType
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType
_IR_VERSION, _OPSET = 8, 17


def _varint(value: int) -> bytes:
    value &= (1 << 64) - 1  # negative int64 values take ten bytes, as protobuf wants
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _int(field: int, value: int) -> _Chunks:
    return [_varint(field << 3) + _varint(value)]


def _message(field: int, chunks: _Chunks) -> _Chunks:
    "A length-delimited field; the chunks are joined once at the end, so weights are copied once"
    return [_varint(field << 3 | 2) + _varint(sum(len(chunk) for chunk in chunks)), *chunks]


def _text(field: int, value: str) -> _Chunks:
    return _message(field, [value.encode()])


def _tensor(name: str, array: NDArray[Any]) -> _Chunks:
    array = np.ascontiguousarray(array)
    chunks: _Chunks = []
    for size in array.shape:
        chunks += _int(1, size)
    chunks += _int(2, _INT64 if array.dtype == np.int64 else _FLOAT)
    chunks += _text(8, name)
    chunks += _message(9, [array.reshape(-1).view(np.uint8).data])
    return chunks


def _attribute(name: str, value: int | float | Sequence[int]) -> _Chunks:
    chunks = _text(1, name)
    if isinstance(value, float):
        return chunks + _int(20, _ATTR_FLOAT) + [_varint(2 << 3 | 5) + struct.pack("<f", value)]
    if isinstance(value, int):
        return chunks + _int(20, _ATTR_INT) + _int(3, value)
    chunks += _int(20, _ATTR_INTS)
    for item in value:
        chunks += _int(8, item)
    return chunks


def _value_info(name: str, elem_type: int, dims: Sequence[int | str]) -> _Chunks:
    shape: _Chunks = []
    for dim in dims:
        shape += _message(1, _text(2, dim) if isinstance(dim, str) else _int(1, dim))
    tensor_type = _int(1, elem_type) + _message(2, shape)
    return _text(1, name) + _message(2, _message(1, tensor_type))


class _Graph:
    "Nodes and initializers of an ONNX graph, as protobuf chunks"

    def __init__(self) -> None:
        self.nodes: _Chunks = []
        self.initializers: _Chunks = []
        self._count = 0

    def _name(self, hint: str) -> str:
        self._count += 1
        return f"{hint}_{self._count}"

    def constant(self, array: NDArray[Any], name: str = "") -> str:
        name = name or self._name("const")
        self.initializers += _message(5, _tensor(name, array))
        return name

    def ops(self, op_type: str, inputs: Sequence[str], outputs: int, **attributes: Any) -> list[str]:
        names = [self._name(op_type.lower()) for _ in range(outputs)]
        node: _Chunks = []
        for value in inputs:
            node += _text(1, value)
        for value in names:
            node += _text(2, value)
        node += _text(4, op_type)
        for key, value in attributes.items():
            node += _message(5, _attribute(key, value))
        self.nodes += _message(1, node)
        return names

    def op(self, op_type: str, *inputs: str, **attributes: Any) -> str:
        return self.ops(op_type, inputs, 1, **attributes)[0]


def build_onnx_model(weights: BertWeights, spec: ModelSpec) -> bytes:
    """A serialised ONNX model (opset 17) computing what forward_numpy computes.

    Inputs ``input_ids`` and ``attention_mask`` (int64, batch x tokens); output ``hidden``
    (float32, batch x tokens x hidden).
    """
    g = _Graph()
    f32 = np.float32
    hidden, heads, eps = spec.dim, spec.num_heads, spec.layer_norm_eps
    one, half = g.constant(np.array(1, f32)), g.constant(np.array(0.5, f32))
    sqrt2, masked = g.constant(np.array(math.sqrt(2), f32)), g.constant(np.array(_MASKED, f32))
    zero = g.constant(np.array([0], np.int64))
    split_heads = g.constant(np.array([0, 0, heads, hidden // heads], np.int64))
    merge_heads = g.constant(np.array([0, 0, hidden], np.int64))
    thirds = g.constant(np.array([hidden] * 3, np.int64))

    def layer_norm(x: str, weight: FloatArray, bias: FloatArray) -> str:
        return g.op("LayerNormalization", x, g.constant(weight), g.constant(bias), axis=-1, epsilon=eps)

    def linear(x: str, weight: FloatArray, bias: FloatArray) -> str:
        return g.op("Add", g.op("MatMul", x, g.constant(weight)), g.constant(bias))

    width = g.op("Shape", "input_ids", start=1, end=2)
    positions = g.op("Slice", g.constant(weights.position, "position_embeddings"), zero, width, zero)
    x = g.op(
        "Add", g.op("Gather", g.constant(weights.word, "word_embeddings"), "input_ids", axis=0), positions
    )
    x = layer_norm(x, weights.norm, weights.norm_bias)
    padding = g.op("Mul", g.op("Sub", one, g.op("Cast", "attention_mask", to=_FLOAT)), masked)
    padding = g.op("Unsqueeze", padding, g.constant(np.array([1, 2], np.int64)))
    for layer in weights.layers:
        query, key, value = g.ops("Split", [linear(x, layer.qkv, layer.qkv_bias), thirds], 3, axis=2)
        query = g.op("Transpose", g.op("Reshape", query, split_heads), perm=[0, 2, 1, 3])
        key = g.op("Transpose", g.op("Reshape", key, split_heads), perm=[0, 2, 3, 1])
        value = g.op("Transpose", g.op("Reshape", value, split_heads), perm=[0, 2, 1, 3])
        scores = g.op("Softmax", g.op("Add", g.op("MatMul", query, key), padding), axis=-1)
        context = g.op("Transpose", g.op("MatMul", scores, value), perm=[0, 2, 1, 3])
        attended = linear(g.op("Reshape", context, merge_heads), layer.attn_out, layer.attn_out_bias)
        x = layer_norm(g.op("Add", attended, x), layer.attn_norm, layer.attn_norm_bias)
        inner = linear(x, layer.up, layer.up_bias)
        erf = g.op("Erf", g.op("Div", inner, sqrt2))
        inner = g.op("Mul", g.op("Mul", inner, g.op("Add", erf, one)), half)
        out = g.op("Add", linear(inner, layer.down, layer.down_bias), x)
        x = layer_norm(out, layer.out_norm, layer.out_norm_bias)
    g.nodes += _message(1, _text(1, x) + _text(2, "hidden") + _text(4, "Identity"))

    graph = g.nodes + _text(2, "memdex_bert") + g.initializers
    graph += _message(11, _value_info("input_ids", _INT64, ["batch", "tokens"]))
    graph += _message(11, _value_info("attention_mask", _INT64, ["batch", "tokens"]))
    graph += _message(12, _value_info("hidden", _FLOAT, ["batch", "tokens", hidden]))
    model = _int(1, _IR_VERSION) + _message(8, _int(2, _OPSET)) + _text(2, "memdex") + _message(7, graph)
    return b"".join(model)


def onnxruntime_available() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


class _OnnxRunner:
    def __init__(self, model: bytes, threads: int | None) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads or 0  # 0: onnxruntime's default, one per physical core
        options.inter_op_num_threads = 1
        options.execution_mode = onnxruntime.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.log_severity_level = 3
        self._session = onnxruntime.InferenceSession(
            model, sess_options=options, providers=["CPUExecutionProvider"]
        )

    def __call__(self, ids: IntArray, mask: IntArray) -> FloatArray:
        hidden: FloatArray = self._session.run(["hidden"], {"input_ids": ids, "attention_mask": mask})[0]
        return hidden


# ---------------------------------------------------------------------------------------------
# The encoder


def _pool(hidden: FloatArray, mask: IntArray, pooling: str) -> FloatArray:
    if pooling == "cls":
        return hidden[:, 0, :]
    weights = mask.astype(np.float32)
    summed = np.matmul(weights[:, None, :], hidden)[:, 0, :]
    return summed / np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1e-9))


class Encoder:
    """Sentence vectors for queries and passages from one model.

    ``batch_size`` texts of similar length run together; ``threads`` caps the cores onnxruntime
    uses (None: one per physical core); the numpy backend leaves threads to BLAS, whose own
    setting (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS) applies;
    ``backend`` is "onnx" (needs onnxruntime), "numpy", or "auto" for onnx when it is installed.
    """

    def __init__(
        self, spec: ModelSpec, *, batch_size: int = 16, threads: int | None = None, backend: Backend = "auto"
    ) -> None:
        if backend not in BACKENDS:
            raise InvalidParameter(f"Unknown encoder backend {backend!r}; use one of {', '.join(BACKENDS)}.")
        if batch_size < 1:
            raise InvalidParameter(f"Encoder batch size must be at least 1, not {batch_size}.")
        if threads is not None and threads < 1:
            raise InvalidParameter(f"Encoder threads must be at least 1, not {threads}.")
        if backend == "onnx" and not onnxruntime_available():
            raise MemdexError(
                "The onnx encoder backend needs onnxruntime; install it, or use the numpy backend."
            )
        self.spec = spec
        self.batch_size = batch_size
        self.threads = threads
        self.backend: Literal["numpy", "onnx"] = (
            "onnx" if backend != "numpy" and onnxruntime_available() else "numpy"
        )
        self._tokenizer = self._load_tokenizer(spec)
        weights = load_weights(spec)
        if self.backend == "onnx":
            self._run: Callable[[IntArray, IntArray], FloatArray] = _OnnxRunner(
                build_onnx_model(weights, spec), threads
            )
        else:
            self._run = lambda ids, mask: forward_numpy(weights, spec, ids, mask)

    @staticmethod
    def _load_tokenizer(spec: ModelSpec) -> Tokenizer:
        from tokenizers import Tokenizer

        try:
            tokenizer = Tokenizer.from_file(str(spec.tokenizer_file))
        except Exception as error:  # not JSON, or a tokenizer format this version cannot read
            raise MemdexError(f"Cannot read model file {spec.tokenizer_file}: {error}") from None
        tokenizer.no_padding()  # padding is per batch, below
        tokenizer.enable_truncation(max_length=spec.max_length)
        return tokenizer

    @property
    def dim(self) -> int:
        return self.spec.dim

    def encode_queries(self, texts: Sequence[str]) -> FloatArray:
        "Vectors for search queries: (len(texts), dim) float32, with the model's query prefix"
        return self.encode(texts, prefix=self.spec.query_prefix)

    def encode_passages(self, texts: Sequence[str]) -> FloatArray:
        "Vectors for stored texts: (len(texts), dim) float32, with the model's passage prefix"
        return self.encode(texts, prefix=self.spec.passage_prefix)

    def encode(self, texts: Sequence[str], prefix: str = "") -> FloatArray:
        "Vectors for texts in their order, each with prefix in front; L2-normalised if the model says so"
        if isinstance(texts, str):
            raise InvalidParameter("Encoder.encode takes a sequence of texts, not one string.")
        out = np.zeros((len(texts), self.spec.dim), dtype=np.float32)
        if len(texts) == 0:
            return out
        prepared = [prefix + text for text in texts]
        if self.spec.do_lower_case:
            prepared = [text.lower() for text in prepared]
        encodings = self._tokenizer.encode_batch(prepared)
        lengths = np.array([len(encoding.ids) for encoding in encodings])
        order = np.argsort(-lengths, kind="stable")  # longest first: similar lengths share a batch
        for start in range(0, len(order), self.batch_size):
            chosen = order[start : start + self.batch_size]
            width = int(lengths[chosen[0]])
            ids = np.zeros((len(chosen), width), dtype=np.int64)
            mask = np.zeros((len(chosen), width), dtype=np.int64)
            for row, index in enumerate(chosen):
                encoding = encodings[index]
                ids[row, : len(encoding.ids)] = encoding.ids
                mask[row, : len(encoding.ids)] = encoding.attention_mask
            out[chosen] = _pool(self._run(ids, mask), mask, self.spec.pooling)
        if self.spec.normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
        return out
