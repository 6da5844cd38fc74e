"""A BERT model's weights arranged for the forward pass, read without copying what need not be.

``model.safetensors`` is memory-mapped: a tensor used as stored (the word embeddings, every
norm and bias) is a read-only view of the file, so a search reads from disk only the rows of
the words it encodes. Linear weights are turned to (in, out), as the forward pass multiplies
them, and that copy is the only one made at full precision.

The linear weights as the forward pass multiplies them are made the first time a model is
loaded at a precision and kept in a safetensors file of their own: at fp32 turned to (in, out)
with query, key and value side by side (making them cost a search process 40 ms; mapping the
copy costs nothing), at int8 also quantised per output channel (one scale per column, signed
int8 within ±127). The copy lives beside the model's files when that folder is writable, else
in memdex's cache folder. Its name is a hash of the model's identity (its files' hash, the
weights' size and modification time) and of the arrangement's version, so a changed model
never meets a stale copy.
"""

from __future__ import annotations

import hashlib
import json
import math
import mmap
import os
import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memdex.errors import MemdexError
from memdex.query.meaning.model import ModelSpec, derived_places, safetensors_header

FloatArray = NDArray[np.float32]
INT8_FORMAT = "memdex-int8-per-channel-1"  # change it when the quantisation changes: old copies are ignored
FP32_FORMAT = "memdex-fp32-in-out-1"  # change it when the arrangement changes
WIDENED_FORMAT = "memdex-int8-widened-1"  # the int8 values as float32, for numpy's products
FORMATS = {"int8": INT8_FORMAT, "fp32": FP32_FORMAT, "int8-widened": WIDENED_FORMAT}
# Numbers both forward passes (numpy and the ONNX graph) share
MASKED = -1e9  # added to attention scores at padding positions: exp() of it is exactly 0 in float32
TINY = 1e-12  # the smallest row peak a step is taken from: a row of zeros stays zeros
_DTYPES: dict[str, Any] = {
    "F64": np.float64,
    "F32": np.float32,
    "F16": np.float16,
    "I64": np.int64,
    "I32": np.int32,
    "I16": np.int16,
    "I8": np.int8,
    "U8": np.uint8,
    "BOOL": np.bool_,
}
_NAMES = {np.dtype(dtype): name for name, dtype in _DTYPES.items()}


# ---------------------------------------------------------------------------------------------
# safetensors: an 8-byte header length, a JSON header of names, dtypes, shapes and offsets, data


def read_safetensors(path: Path) -> tuple[dict[str, NDArray[Any]], dict[str, str]]:
    """Every tensor of a safetensors file as a read-only array over one memory map, and the
    header's metadata. Nothing is read until used; bfloat16 comes back as float32 (a copy)."""
    try:
        with open(path, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            header, header_size = safetensors_header(stream, size)
            mapped = mmap.mmap(stream.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
        metadata = header.pop("__metadata__", None) or {}
        tensors = {name: _tensor(mapped, 8 + header_size, size, about) for name, about in header.items()}
    except (OSError, ValueError, KeyError, TypeError, struct.error) as error:
        # a truncated download, another format, or a header this reader does not know
        raise MemdexError(f"Cannot read model file {path}: {error}") from None
    return tensors, metadata


def _tensor(mapped: mmap.mmap | bytes, start: int, size: int, about: Mapping[str, Any]) -> NDArray[Any]:
    begin, end = (int(offset) for offset in about["data_offsets"])
    shape = tuple(int(n) for n in about["shape"])
    if not 0 <= begin <= end <= size - start:
        raise ValueError(f"tensor data at bytes {begin}-{end} lies outside the file")
    if about["dtype"] == "BF16":  # the high half of a float32
        raw = np.frombuffer(mapped, dtype="<u2", count=(end - begin) // 2, offset=start + begin)
        return (raw.astype(np.uint32) << 16).view(np.float32).reshape(shape)
    dtype = np.dtype(_DTYPES[about["dtype"]]).newbyteorder("<")
    if (end - begin) != math.prod(shape) * dtype.itemsize:
        raise ValueError(f"tensor of shape {shape} ({about['dtype']}) does not fill bytes {begin}-{end}")
    array = np.frombuffer(mapped, dtype=dtype, count=math.prod(shape), offset=start + begin).reshape(shape)
    return array if array.flags.aligned else array.copy()  # BLAS wants aligned data


def write_safetensors(path: Path, tensors: Mapping[str, NDArray[Any]], metadata: Mapping[str, str]) -> None:
    "Write tensors as a safetensors file, atomically: a reader sees the old file or the whole new one."
    import tempfile  # a search that only reads the kept copy need not import it (6 ms)

    header: dict[str, Any] = {"__metadata__": dict(metadata)}
    offset = 0
    for name, array in tensors.items():
        size = array.nbytes
        header[name] = {
            "dtype": _NAMES[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [offset, offset + size],
        }
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)  # tensors start 8-byte aligned, as safetensors' own writer does
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(struct.pack("<Q", len(encoded)) + encoded)
            for array in tensors.values():
                stream.write(np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).data)
        os.chmod(temporary, 0o644)  # mkstemp makes it private; others who read the model may read it
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


# ---------------------------------------------------------------------------------------------
# Weights for the forward pass


@dataclass(frozen=True)
class Linear:
    "A linear layer as the forward pass runs it: x @ weight (in, out), scaled per column at int8, + bias"

    weight: NDArray[Any]  # float32, or int8 quantised per output column
    bias: FloatArray
    scale: FloatArray | None = None  # int8 only: each column's step


@dataclass(frozen=True)
class LayerWeights:
    "One encoder layer; the query part of qkv is pre-scaled by 1/sqrt(head size)"

    qkv: Linear  # (hidden, 3 * hidden): query, key and value side by side
    attn_out: Linear
    attn_norm: FloatArray  # LayerNorm weight
    attn_norm_bias: FloatArray
    up: Linear  # (hidden, intermediate)
    down: Linear  # (intermediate, hidden)
    out_norm: FloatArray
    out_norm_bias: FloatArray


@dataclass(frozen=True)
class BertWeights:
    "The tensors of a BERT encoder, arranged for the forward pass"

    word: FloatArray  # (vocabulary, hidden): a view of the model file
    position: FloatArray  # (positions, hidden), token type 0 already added: one sentence per text
    norm: FloatArray
    norm_bias: FloatArray
    layers: tuple[LayerWeights, ...]


LINEARS = ("qkv", "attn_out", "up", "down")
_NONE = np.zeros(0, dtype=np.uint8)  # what a cached copy lacking a tensor offers instead


def _canonical(name: str) -> str:
    "A tensor name without the task-head prefix and with old LayerNorm names made current"
    name = name.removeprefix("bert.")
    if name.endswith("LayerNorm.gamma"):
        return name.removesuffix("gamma") + "weight"
    if name.endswith("LayerNorm.beta"):
        return name.removesuffix("beta") + "bias"
    return name


def load_weights(spec: ModelSpec, widened: bool = False) -> BertWeights:
    """The model's weights at the spec's precision, or say which tensor is missing.

    The linear layers come from the cached copy (made and saved here the first time): at fp32
    every number is what loading the file whole and transposing gave before, so vectors are
    bit for bit the same; at int8 their float32 form is never built again. ``widened``: at
    int8, the int8 values as float32, as numpy multiplies them (a cached copy of its own:
    widening them cost a search process 25 ms).
    """
    if spec.packed:
        raise MemdexError(f"{spec.path} is a packed model: packaged.model_weights reads it")
    file = spec.weights_file
    stored, _ = read_safetensors(file)
    raw = {_canonical(name): array for name, array in stored.items()}

    def tensor(name: str) -> FloatArray:
        if name not in raw:
            raise MemdexError(f"Model file {file} has no tensor {name!r}; is it a BERT model?")
        array = raw[name]
        return array if array.dtype == np.float32 else array.astype(np.float32)

    def transposed(name: str) -> FloatArray:
        "A torch Linear's (out, in) weight turned to (in, out)"
        return np.ascontiguousarray(tensor(f"{name}.weight").T)

    scale = np.float32(1.0 / math.sqrt(spec.dim // spec.num_heads))
    prefixes = [f"encoder.layer.{index}" for index in range(spec.num_layers)]

    def matrices(prefix: str) -> dict[str, FloatArray]:
        "A layer's linear weights at full precision, (in, out)"
        attention = f"{prefix}.attention.self"
        return {
            "qkv": np.concatenate(
                [
                    transposed(f"{attention}.query") * scale,
                    transposed(f"{attention}.key"),
                    transposed(f"{attention}.value"),
                ],
                axis=1,
            ),
            "attn_out": transposed(f"{prefix}.attention.output.dense"),
            "up": transposed(f"{prefix}.intermediate.dense"),
            "down": transposed(f"{prefix}.output.dense"),
        }

    def biases(prefix: str) -> dict[str, FloatArray]:
        attention = f"{prefix}.attention.self"
        return {
            "qkv": np.concatenate(
                [
                    tensor(f"{attention}.query.bias") * scale,
                    tensor(f"{attention}.key.bias"),
                    tensor(f"{attention}.value.bias"),
                ]
            ),
            "attn_out": tensor(f"{prefix}.attention.output.dense.bias"),
            "up": tensor(f"{prefix}.intermediate.dense.bias"),
            "down": tensor(f"{prefix}.output.dense.bias"),
        }

    arranged = _cached_linears(spec, lambda: _arrange(spec, [matrices(prefix) for prefix in prefixes]))
    if widened and spec.precision == "int8":
        int8 = arranged
        arranged = _cached_linears(spec, lambda: _widen(int8), "int8-widened")
    linears = [
        {
            name: Linear(arranged[f"{i}.{name}"], bias, arranged.get(f"{i}.{name}.scale"))
            for name, bias in biases(prefix).items()
        }
        for i, prefix in enumerate(prefixes)
    ]
    layers = tuple(
        LayerWeights(
            **linear,
            attn_norm=tensor(f"{prefix}.attention.output.LayerNorm.weight"),
            attn_norm_bias=tensor(f"{prefix}.attention.output.LayerNorm.bias"),
            out_norm=tensor(f"{prefix}.output.LayerNorm.weight"),
            out_norm_bias=tensor(f"{prefix}.output.LayerNorm.bias"),
        )
        for prefix, linear in zip(prefixes, linears, strict=True)
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
        layers=layers,
    )


# ---------------------------------------------------------------------------------------------
# int8 per output channel, cached


def quantize_columns(weight: FloatArray) -> tuple[NDArray[np.int8], FloatArray]:
    "(in, out) weights as int8 within ±127 and each column's step: weight ≈ int8 × step"
    step = np.maximum(np.abs(weight).max(axis=0), np.float32(1e-12)) / np.float32(127)
    return np.rint(weight / step).astype(np.int8), step.astype(np.float32)


def linears_file_name(spec: ModelSpec, arrangement: str | None = None) -> str:
    "The cached copy's name: the model's identity, the arrangement (a precision) and its version, hashed."
    arrangement = arrangement or spec.precision
    weights = spec.weights_file.stat()
    key = f"{spec.identity}|{weights.st_size}|{weights.st_mtime_ns}|{FORMATS[arrangement]}"
    return f"memdex-{arrangement}-{hashlib.sha256(key.encode()).hexdigest()[:16]}.safetensors"


def linears_places(spec: ModelSpec, writing: bool = False, arrangement: str | None = None) -> list[Path]:
    "Where the cached linear weights may be (model.derived_places)."
    return derived_places(spec, linears_file_name(spec, arrangement), writing)


def _widen(int8: Mapping[str, NDArray[Any]]) -> dict[str, NDArray[Any]]:
    "The int8 weights as float32 (the products and their sums stay exact), their steps as they are"
    return {name: a.astype(np.float32) if a.dtype == np.int8 else a for name, a in int8.items()}


def _fits(spec: ModelSpec, tensors: Mapping[str, NDArray[Any]], arrangement: str) -> bool:
    "Whether a cached copy holds every linear weight, of the arrangement's types and shapes"
    dim = spec.dim
    dtype = np.int8 if arrangement == "int8" else np.float32
    for index in range(spec.num_layers):
        for name in LINEARS:
            weight = tensors.get(f"{index}.{name}", _NONE)
            if weight.ndim != 2 or (weight.shape[0] != dim and weight.shape[1] != dim):
                return False
            if weight.dtype != dtype:
                return False
            if arrangement != "fp32" and tensors.get(f"{index}.{name}.scale", _NONE).dtype != np.float32:
                return False
    return True


def _arrange(spec: ModelSpec, layers: list[dict[str, FloatArray]]) -> dict[str, NDArray[Any]]:
    "Each layer's full-precision linear weights at the spec's precision, named for the cached copy"
    arranged: dict[str, NDArray[Any]] = {}
    for index, layer in enumerate(layers):
        for name in LINEARS:
            if spec.precision == "fp32":
                arranged[f"{index}.{name}"] = layer[name]
            else:
                arranged[f"{index}.{name}"], arranged[f"{index}.{name}.scale"] = quantize_columns(layer[name])
    return arranged


def _cached_linears(
    spec: ModelSpec, make: Callable[[], dict[str, NDArray[Any]]], arrangement: str | None = None
) -> dict[str, NDArray[Any]]:
    """The linear weights at the spec's precision (or ``arrangement``), (in, out): from a
    cached copy that fits, else made now by ``make`` and saved."""
    arrangement = arrangement or spec.precision
    expected = {"format": FORMATS[arrangement], "model": spec.identity, "layers": str(spec.num_layers)}
    for place in linears_places(spec, arrangement=arrangement):
        if not place.is_file():
            continue
        try:
            tensors, metadata = read_safetensors(place)
        except MemdexError:  # truncated or foreign: made again below
            continue
        if all(metadata.get(key) == value for key, value in expected.items()) and _fits(
            spec, tensors, arrangement
        ):
            return tensors
    arranged = make()
    for place in linears_places(spec, writing=True, arrangement=arrangement):
        try:
            write_safetensors(place, arranged, expected)
            break
        except OSError:  # a read-only model folder: try the next place; none works, keep it in memory
            continue
    return arranged
