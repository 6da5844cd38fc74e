"""Turn texts into sentence vectors with a BERT-family model, without torch.

Two interchangeable backends run the same weights: a plain numpy forward pass, and an ONNX
graph (onnx_graph.py) run by onnxruntime when it is installed. Each runs at fp32 or at int8
(the spec's precision): int8 quantises the linear layers' weights per output channel and
their inputs one token at a time, so a text's vector depends on its text alone, never on the
texts it is batched with; numpy runs the same integer arithmetic in float32, exactly.

Texts are tokenised and run in small batches of one length each (about TOKENS_PER_RUN word
pieces): no padding, and the work of one batch stays in the CPU's cache. Embedding spreads
batches over every core, one thread each; a search's query runs on one thread.
"""

from __future__ import annotations

import importlib.util
import math
import os
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
from numpy.typing import NDArray

from memdex.errors import InvalidParameter, MemdexError
from memdex.query.meaning import blas_pinned
from memdex.query.meaning.model import ModelSpec
from memdex.query.meaning.packaged import model_weights
from memdex.query.meaning.weights import MASKED, TINY, BertWeights, Linear

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from memdex.query.meaning.wordpiece import WordPiece

Backend = Literal["auto", "numpy", "onnx"]
BACKENDS: tuple[str, ...] = ("auto", "numpy", "onnx")
FloatArray = NDArray[np.float32]
IntArray = NDArray[np.int64]
# Word pieces per model run. int8 runs fastest in small batches (its intermediate numbers then
# stay in cache): per text of 128 pieces, 1 or 2 texts a run took 19 CPU-ms, 4 took 20.5, 8
# took 25 (padded batches, one thread); fp32 cost about the same at any size. Over 512 Serena
# chunk texts, runs of 128 to 1,024 pieces cost within 5% of each other, 256 among the least.
TOKENS_PER_RUN = 256
MAX_BATCH = 64  # texts per run at most, however short
# A search's query is split in Python (wordpiece.py) when it is this small; more text goes to
# `tokenizers`, whose Rust is faster once loaded and which handles any Unicode.
QUICK_TEXTS = 8
QUICK_CHARS = 4_000


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


def _linear(x: FloatArray, layer: Linear) -> FloatArray:
    "x @ weight + bias; at int8 on x quantised row by row, as the ONNX graph does it"
    if layer.scale is None:
        out: FloatArray = x @ layer.weight
    else:  # weight holds the int8 values as float32: the products and their sums are exact
        step = np.maximum(np.abs(x).max(axis=1, keepdims=True), np.float32(TINY)) / np.float32(127)
        out = np.rint(x / step) @ layer.weight
        out *= layer.scale
        out *= step
    out += layer.bias
    return out


def numpy_weights(weights: BertWeights) -> BertWeights:
    "The weights as the numpy backend multiplies them: int8 values widened to float32 once"

    def widened(layer: Linear) -> Linear:
        if layer.scale is None or layer.weight.dtype == np.float32:  # fp32, or widened already
            return layer
        return replace(layer, weight=layer.weight.astype(np.float32))

    layers = tuple(
        replace(
            layer,
            qkv=widened(layer.qkv),
            attn_out=widened(layer.attn_out),
            up=widened(layer.up),
            down=widened(layer.down),
        )
        for layer in weights.layers
    )
    return replace(weights, layers=layers)


def forward_numpy(weights: BertWeights, spec: ModelSpec, ids: IntArray, mask: IntArray) -> FloatArray:
    "The last hidden states, (batch, tokens, hidden), of a padded batch (weights from numpy_weights)"
    batch, width = ids.shape
    heads = spec.num_heads
    eps = spec.layer_norm_eps
    x = weights.word[ids.reshape(-1)]  # one row per token: the linear layers are then one matrix product
    x += np.tile(weights.position[:width], (batch, 1))
    x = _layer_norm(x, weights.norm, weights.norm_bias, eps)
    padding = ((1 - mask) * MASKED).astype(np.float32)[:, None, None, :]
    for layer in weights.layers:
        qkv = _linear(x, layer.qkv)
        query, key, value = qkv.reshape(batch, width, 3, heads, -1).transpose(2, 0, 3, 1, 4)
        scores = query @ key.transpose(0, 1, 3, 2)
        scores += padding
        scores -= scores.max(axis=-1, keepdims=True)
        np.exp(scores, out=scores)
        scores /= scores.sum(axis=-1, keepdims=True)
        context = (scores @ value).transpose(0, 2, 1, 3).reshape(batch * width, -1)
        attended = _linear(context, layer.attn_out)
        attended += x
        x = _layer_norm(attended, layer.attn_norm, layer.attn_norm_bias, eps)
        inner = _linear(x, layer.up)
        _gelu_rows_(inner)
        out = _linear(inner, layer.down)
        out += x
        x = _layer_norm(out, layer.out_norm, layer.out_norm_bias, eps)
    return x.reshape(batch, width, -1)


# ---------------------------------------------------------------------------------------------
# The ONNX backend


def onnxruntime_available() -> bool:
    return importlib.util.find_spec("onnxruntime") is not None


class _OnnxRunner:
    "One onnxruntime session on one intra-op thread: threads of our own run batches side by side"

    def __init__(self, model: bytes) -> None:
        import onnxruntime

        options = onnxruntime.SessionOptions()
        # One thread per run: a batch of a few hundred word pieces is too little work to share
        # (two threads on one batch cost 1.9x the CPU, spinning on a busy machine), and
        # batches run in parallel instead (Encoder.encode).
        options.intra_op_num_threads = 1
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


def available_cores() -> int:
    "The cores this process may run on"
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


def _pool(hidden: FloatArray, mask: IntArray, pooling: str) -> FloatArray:
    if pooling == "cls":
        return hidden[:, 0, :]
    weights = mask.astype(np.float32)
    summed = np.matmul(weights[:, None, :], hidden)[:, 0, :]
    return summed / np.maximum(weights.sum(axis=1, keepdims=True), np.float32(1e-9))


def batches(lengths: Sequence[int], batch_size: int | None = None) -> list[list[int]]:
    """Indexes of texts grouped into model runs, longest first: texts of one length only, so no
    run holds padding and a text's numbers are the same whatever it runs with (at int8 a
    difference in the last bit of one number changes which way later roundings go). A run
    holds ``batch_size`` texts at most, or (None) as many as fit TOKENS_PER_RUN word pieces,
    at most MAX_BATCH."""
    by_length: dict[int, list[int]] = {}
    for index, length in enumerate(lengths):
        by_length.setdefault(length, []).append(index)
    runs: list[list[int]] = []
    for length in sorted(by_length, reverse=True):
        group = by_length[length]
        size = batch_size or max(1, min(MAX_BATCH, TOKENS_PER_RUN // max(length, 1)))
        runs += [group[start : start + size] for start in range(0, len(group), size)]
    return runs


class Encoder:
    """Sentence vectors for queries and passages from one model, at the spec's precision.

    ``batch_size``: texts per model run (None: as many of one length as fit TOKENS_PER_RUN
    word pieces); ``threads``: runs at once, each on one thread (None: one per core this
    process may use; a search's query encoder takes 1); ``backend`` is "onnx" (needs
    onnxruntime), "numpy", or "auto" for onnx when it is installed. The numpy backend holds
    BLAS to one thread while it encodes: two OpenBLAS threads on one small product cost more
    than they save, and on a busy machine several times more (3.2-8.2 s against 0.65 s for
    six texts, load average 8 on two cores).
    """

    def __init__(
        self,
        spec: ModelSpec,
        *,
        batch_size: int | None = None,
        threads: int | None = None,
        backend: Backend = "auto",
    ) -> None:
        if backend not in BACKENDS:
            raise InvalidParameter(f"Unknown encoder backend {backend!r}; use one of {', '.join(BACKENDS)}.")
        if batch_size is not None and batch_size < 1:
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
        self._controller: Any = None
        self._wordpiece: WordPiece | None = None
        self._wordpiece_looked = False
        weights = model_weights(spec, widened=self.backend == "numpy")
        if self.backend == "onnx":
            from memdex.query.meaning.onnx_graph import build_onnx_model  # a search never needs it

            self._run: Callable[[IntArray, IntArray], FloatArray] = _OnnxRunner(
                build_onnx_model(weights, spec)
            )
        else:
            prepared = numpy_weights(weights)
            self._run = lambda ids, mask: forward_numpy(prepared, spec, ids, mask)

    @cached_property
    def _tokenizer(self) -> Tokenizer:
        "`tokenizers` on the model's tokenizer.json: loaded when a text is more than a query"
        from tokenizers import Tokenizer

        spec = self.spec
        try:
            tokenizer = Tokenizer.from_file(str(spec.tokenizer_file))
        except Exception as error:  # not JSON, or a tokenizer format this version cannot read
            raise MemdexError(f"Cannot read model file {spec.tokenizer_file}: {error}") from None
        tokenizer.no_padding()  # a run holds texts of one length: nothing is padded
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
        """Vectors for texts in their order, each with prefix in front; L2-normalised if the
        model says so. Hand it many texts at once (hundreds): it groups them by length, so the
        more it is given, the fuller its batches."""
        if isinstance(texts, str):
            raise InvalidParameter("Encoder.encode takes a sequence of texts, not one string.")
        out = np.zeros((len(texts), self.spec.dim), dtype=np.float32)
        if len(texts) == 0:
            return out
        prepared = [prefix + text for text in texts]
        if self.spec.do_lower_case:
            prepared = [text.lower() for text in prepared]
        pieces = self._quick_ids(prepared)
        if pieces is None:
            pieces = [encoding.ids for encoding in self._tokenizer.encode_batch(prepared)]
        lengths = [len(ids) for ids in pieces]

        def run(chosen: list[int]) -> None:
            ids = np.array([pieces[index] for index in chosen], dtype=np.int64)
            mask = np.ones_like(ids)  # one length a run: nothing to mask
            out[chosen] = _pool(self._run(ids, mask), mask, self.spec.pooling)

        runs = batches(lengths, self.batch_size)
        workers = min(self.threads or available_cores(), len(runs))
        with self._blas_threads():
            if workers > 1:
                from concurrent.futures import ThreadPoolExecutor

                with ThreadPoolExecutor(workers, thread_name_prefix="memdex-encode") as pool:
                    for _ in pool.map(run, runs):
                        pass
            else:
                for chosen in runs:
                    run(chosen)
        if self.spec.normalize:
            out /= np.maximum(np.linalg.norm(out, axis=1, keepdims=True), np.float32(1e-12))
        return out

    def _quick_ids(self, texts: list[str]) -> list[list[int]] | None:
        """A query's word pieces without loading `tokenizers` (wordpiece.py), when the texts are
        few and short, the model's tokenizer is BERT's own and the text plain ASCII; else None."""
        if len(texts) > QUICK_TEXTS or sum(map(len, texts)) > QUICK_CHARS:
            return None
        if not self._wordpiece_looked:
            from memdex.query.meaning import wordpiece

            self._wordpiece, self._wordpiece_looked = wordpiece.load(self.spec), True
        if self._wordpiece is None:
            return None
        found: list[list[int]] = []
        for text in texts:
            ids = self._wordpiece.ids(text, self.spec.max_length)
            if ids is None:
                return None
            found.append(ids)
        return found

    def _blas_threads(self) -> AbstractContextManager[Any]:
        "The numpy backend's BLAS held to one thread while it encodes (its runs are the threads)"
        if self.backend != "numpy" or blas_pinned():
            return nullcontext()
        if self._controller is None:  # looking the libraries up costs 0.4 ms: once per encoder
            from threadpoolctl import ThreadpoolController

            self._controller = ThreadpoolController()
        limited: AbstractContextManager[Any] = self._controller.limit(limits=1, user_api="blas")
        return limited
