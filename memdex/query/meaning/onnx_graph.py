"""The encoder as an ONNX graph for onnxruntime, written as protobuf bytes by hand.

Field numbers are those of onnx.proto, so the ``onnx`` package is not needed. The graph
computes what ``encoder.forward_numpy`` computes, on a (tokens, hidden) stream (one row per
token of the batch). At int8 each linear layer quantises its input one row at a time
(symmetric, ±127, the row's own step) and multiplies it with the int8 weights by
onnxruntime's MatMulIntegerToFloat: a token's numbers, and so a text's vector, never depend
on the other texts of its batch, as they would with DynamicQuantizeLinear's one step per
tensor.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memdex.query.meaning.model import ModelSpec
from memdex.query.meaning.weights import MASKED, TINY, BertWeights, FloatArray, Linear

_Chunks = list[bytes | memoryview]
_ELEMENT_TYPES = {  # TensorProto.DataType
    np.dtype(np.float32): 1,
    np.dtype(np.uint8): 2,
    np.dtype(np.int8): 3,
    np.dtype(np.int32): 6,
    np.dtype(np.int64): 7,
}
_FLOAT, _INT64 = 1, 7
_ATTR_FLOAT, _ATTR_INT, _ATTR_INTS = 1, 2, 7  # AttributeProto.AttributeType
_IR_VERSION, _OPSET = 8, 17
_MS_DOMAIN = "com.microsoft"  # onnxruntime's own operators


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
    chunks += _int(2, _ELEMENT_TYPES[array.dtype])
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

    def ops(
        self, op_type: str, inputs: Sequence[str], outputs: int, domain: str = "", **attributes: Any
    ) -> list[str]:
        names = [self._name(op_type.lower()) for _ in range(outputs)]
        node: _Chunks = []
        for value in inputs:
            node += _text(1, value)
        for value in names:
            node += _text(2, value)
        node += _text(4, op_type)
        for key, value in attributes.items():
            node += _message(5, _attribute(key, value))
        if domain:
            node += _text(7, domain)
        self.nodes += _message(1, node)
        return names

    def op(self, op_type: str, *inputs: str, domain: str = "", **attributes: Any) -> str:
        return self.ops(op_type, inputs, 1, domain, **attributes)[0]


def build_onnx_model(weights: BertWeights, spec: ModelSpec) -> bytes:
    """A serialised ONNX model (opset 17, and onnxruntime's MatMulIntegerToFloat at int8)
    computing what forward_numpy computes.

    Inputs ``input_ids`` and ``attention_mask`` (int64, batch x tokens); output ``hidden``
    (float32, batch x tokens x hidden).
    """
    g = _Graph()
    f32 = np.float32
    hidden, heads, eps = spec.dim, spec.num_heads, spec.layer_norm_eps
    one, half = g.constant(np.array(1, f32)), g.constant(np.array(0.5, f32))
    sqrt2, masked = g.constant(np.array(math.sqrt(2), f32)), g.constant(np.array(MASKED, f32))
    zero = g.constant(np.array([0], np.int64))
    batch_tokens = g.op("Shape", "input_ids")
    rows = g.constant(np.array([-1, hidden], np.int64))
    split_heads = g.op(
        "Concat", batch_tokens, g.constant(np.array([heads, hidden // heads], np.int64)), axis=0
    )
    thirds = g.constant(np.array([hidden] * 3, np.int64))
    tiny, levels = g.constant(np.array(TINY, f32)), g.constant(np.array(127, f32))
    middle = g.constant(np.array(128, np.uint8))  # int8 values carried as uint8 around 128
    last_axis = g.constant(np.array([1], np.int64))

    def layer_norm(x: str, weight: FloatArray, bias: FloatArray) -> str:
        return g.op("LayerNormalization", x, g.constant(weight), g.constant(bias), axis=-1, epsilon=eps)

    def linear(x: str, layer: Linear) -> str:
        if layer.scale is None:
            return g.op("Add", g.op("MatMul", x, g.constant(layer.weight)), g.constant(layer.bias))
        step = g.op("Div", g.op("Max", g.op("ReduceMax", g.op("Abs", x), axes=[1], keepdims=0), tiny), levels)
        quantised = g.op("QuantizeLinear", x, step, g.op("Expand", middle, g.op("Shape", step)), axis=0)
        product = g.op(
            "MatMulIntegerToFloat",
            quantised,
            g.constant(layer.weight),
            g.op("Unsqueeze", step, last_axis),
            g.constant(layer.scale),
            middle,
            domain=_MS_DOMAIN,
        )
        return g.op("Add", product, g.constant(layer.bias))

    width = g.op("Shape", "input_ids", start=1, end=2)
    positions = g.op("Slice", g.constant(weights.position, "position_embeddings"), zero, width, zero)
    x = g.op(
        "Add",
        g.op("Gather", g.constant(weights.word, "word_embeddings"), "input_ids", axis=0),
        positions,
    )
    x = g.op("Reshape", layer_norm(x, weights.norm, weights.norm_bias), rows)
    padding = g.op("Mul", g.op("Sub", one, g.op("Cast", "attention_mask", to=_FLOAT)), masked)
    padding = g.op("Unsqueeze", padding, g.constant(np.array([1, 2], np.int64)))
    for layer in weights.layers:
        query, key, value = g.ops("Split", [linear(x, layer.qkv), thirds], 3, axis=1)
        query = g.op("Transpose", g.op("Reshape", query, split_heads), perm=[0, 2, 1, 3])
        key = g.op("Transpose", g.op("Reshape", key, split_heads), perm=[0, 2, 3, 1])
        value = g.op("Transpose", g.op("Reshape", value, split_heads), perm=[0, 2, 1, 3])
        scores = g.op("Softmax", g.op("Add", g.op("MatMul", query, key), padding), axis=-1)
        context = g.op("Transpose", g.op("MatMul", scores, value), perm=[0, 2, 1, 3])
        attended = linear(g.op("Reshape", context, rows), layer.attn_out)
        x = layer_norm(g.op("Add", attended, x), layer.attn_norm, layer.attn_norm_bias)
        inner = linear(x, layer.up)
        erf = g.op("Erf", g.op("Div", inner, sqrt2))
        inner = g.op("Mul", g.op("Mul", inner, g.op("Add", erf, one)), half)
        out = g.op("Add", linear(inner, layer.down), x)
        x = layer_norm(out, layer.out_norm, layer.out_norm_bias)
    shape = g.op("Concat", batch_tokens, g.constant(np.array([hidden], np.int64)), axis=0)
    g.nodes += _message(1, _text(1, g.op("Reshape", x, shape)) + _text(2, "hidden") + _text(4, "Identity"))

    graph = g.nodes + _text(2, "memdex_bert") + g.initializers
    graph += _message(11, _value_info("input_ids", _INT64, ["batch", "tokens"]))
    graph += _message(11, _value_info("attention_mask", _INT64, ["batch", "tokens"]))
    graph += _message(12, _value_info("hidden", _FLOAT, ["batch", "tokens", hidden]))
    opsets = _message(8, _int(2, _OPSET)) + _message(8, _text(1, _MS_DOMAIN) + _int(2, 1))
    model = _int(1, _IR_VERSION) + opsets + _text(2, "memdex") + _message(7, graph)
    return b"".join(model)
