"""A packed model: every tensor of a BERT encoder as memdex's int8 forward pass runs it, in one
file small enough to ship inside the package (memdex/models/, docs/model.md).

The linear layers are exactly the int8 weights memdex makes of a model's ``model.safetensors``
and caches (weights.py: per output column, query pre-scaled, (in, out)), and the word and
position embeddings, norms and biases are its float32 ones. So its vectors are the source's at
int8, bit for bit, and so is its name (model.model_name reads it from the file): an index
embedded with either is searched by the other. Quantising the word embeddings too would halve
the file (24 MB instead of 59) but moves the vectors and lowered two eval sets (docs/model.md).

Loading maps the file and uses its tensors in place: nothing is made or written, except the
int8 values widened to float32 that the numpy backend multiplies (weights.load_weights does the
same for every int8 model: a copy in memdex's cache folder).
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memdex.errors import MemdexError
from memdex.query.meaning.model import (
    CONFIG_FILES,
    PACKED_FILE,
    PACKED_VOCAB,
    ModelSpec,
    load_spec,
    model_name,
)
from memdex.query.meaning.weights import (
    LINEARS,
    BertWeights,
    LayerWeights,
    Linear,
    _cached_linears,
    _widen,
    load_weights,
    read_safetensors,
    write_safetensors,
)

FORMAT = "memdex-packed-int8-2"  # change it when the file's layout changes
_NORMS = ("attn_norm", "attn_norm_bias", "out_norm", "out_norm_bias")


def pack(weights: BertWeights) -> dict[str, NDArray[Any]]:
    "An int8 model's weights (weights.load_weights) as the packed file's tensors"
    if any(layer.qkv.scale is None or layer.qkv.weight.dtype != np.int8 for layer in weights.layers):
        raise MemdexError("Only a model's int8 weights can be packed (load them at precision int8).")
    tensors: dict[str, NDArray[Any]] = {
        "word": np.ascontiguousarray(weights.word, dtype=np.float32),
        "position": weights.position,
        "norm": weights.norm,
        "norm_bias": weights.norm_bias,
    }
    for index, layer in enumerate(weights.layers):
        for name in LINEARS:
            linear: Linear = getattr(layer, name)
            assert linear.scale is not None  # checked above, for every linear alike
            tensors[f"{index}.{name}"] = linear.weight
            tensors[f"{index}.{name}.scale"] = linear.scale
            tensors[f"{index}.{name}.bias"] = linear.bias
        for name in _NORMS:
            tensors[f"{index}.{name}"] = getattr(layer, name)
    return tensors


def model_weights(spec: ModelSpec, widened: bool = False) -> BertWeights:
    "A model's weights as the encoder runs them: ``load_packed`` for a packed model, else ``load_weights``"
    return load_packed(spec, widened) if spec.packed else load_weights(spec, widened)


def load_packed(spec: ModelSpec, widened: bool = False) -> BertWeights:
    """A packed model's weights, views of its memory-mapped file; ``widened``: the linear
    layers' int8 values as float32 (weights.load_weights), from memdex's cache folder."""
    file = spec.weights_file
    tensors, metadata = read_safetensors(file)
    if metadata.get("format") != FORMAT or metadata.get("layers") != str(spec.num_layers):
        raise MemdexError(
            f"Model file {file} is not a packed model memdex can read ({metadata.get('format')!r}, "
            f"{FORMAT!r} expected); reinstall memdex, or build it again with scripts/package_model.py."
        )

    def tensor(name: str) -> NDArray[Any]:
        if name not in tensors:
            raise MemdexError(f"Model file {file} has no tensor {name!r}; build it again.")
        return tensors[name]

    linears = {f"{i}.{name}": tensor(f"{i}.{name}") for i in range(spec.num_layers) for name in LINEARS}
    scales = {f"{key}.scale": tensor(f"{key}.scale") for key in linears}
    if widened:
        arranged = _cached_linears(spec, lambda: _widen({**linears, **scales}), "int8-widened")
        linears = {key: arranged[key] for key in linears}

    def linear(i: int, name: str) -> Linear:
        return Linear(linears[f"{i}.{name}"], tensor(f"{i}.{name}.bias"), scales[f"{i}.{name}.scale"])

    layers = tuple(
        LayerWeights(
            qkv=linear(i, "qkv"),
            attn_out=linear(i, "attn_out"),
            up=linear(i, "up"),
            down=linear(i, "down"),
            attn_norm=tensor(f"{i}.attn_norm"),
            attn_norm_bias=tensor(f"{i}.attn_norm_bias"),
            out_norm=tensor(f"{i}.out_norm"),
            out_norm_bias=tensor(f"{i}.out_norm_bias"),
        )
        for i in range(spec.num_layers)
    )
    word = tensor("word")
    if word.shape[1:] != (spec.dim,):
        raise MemdexError(f"Model file {file}: embeddings have shape {word.shape}, config says {spec.dim}")
    return BertWeights(
        word=word,
        position=tensor("position"),
        norm=tensor("norm"),
        norm_bias=tensor("norm_bias"),
        layers=layers,
    )


@dataclass
class PackReport:
    source: str  # the source model's name at int8
    name: str  # the packed model's name at int8 (what its vectors are stored under, before @)
    files: dict[str, int] = field(default_factory=dict)  # file -> bytes

    @property
    def total(self) -> int:
        return sum(self.files.values())


def build(source: Path, destination: Path, license_file: Path | None = None) -> PackReport:
    """Pack the model in ``source`` (a folder with model.safetensors) into ``destination``:
    its configuration and tokenizer as they are, PACKED_FILE, PACKED_VOCAB, a NOTICE.md
    saying where it comes from and what was changed, and ``license_file`` as LICENSE."""
    from memdex.query.meaning.wordpiece import vocabulary_text

    spec = load_spec(source, "int8")
    if spec.packed:
        raise MemdexError(f"{source} is a packed model already; pack the full model's folder.")
    weights_hash = hashlib.sha256(spec.weights_file.read_bytes()).hexdigest()
    vocabulary = vocabulary_text(spec)
    if vocabulary is None:
        raise MemdexError(
            f"{spec.tokenizer_file} is not BERT's own WordPiece; memdex packs only such models."
        )
    destination.mkdir(parents=True, exist_ok=True)
    for stale in [p for p in destination.rglob("*") if p.is_file()]:
        stale.unlink()
    for name in CONFIG_FILES:
        if (spec.path / name).is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(spec.path / name, destination / name)
    (destination / PACKED_VOCAB).write_text(vocabulary, encoding="utf-8")
    # The vectors are the source's at int8, bit for bit: so is their name (model.model_name).
    metadata = {"format": FORMAT, "layers": str(spec.num_layers), "name": model_name(spec.path)}
    write_safetensors(destination / PACKED_FILE, pack(load_weights(spec)), metadata)
    if license_file is not None:
        shutil.copyfile(license_file, destination / "LICENSE")
    packed = load_spec(destination, "int8")
    (destination / "NOTICE.md").write_text(_notice(spec, packed, weights_hash), encoding="utf-8")
    files = {str(p.relative_to(destination)): p.stat().st_size for p in destination.rglob("*") if p.is_file()}
    return PackReport(source=spec.name, name=packed.name, files=dict(sorted(files.items())))


def _notice(source: ModelSpec, packed: ModelSpec, weights_hash: str) -> str:
    return f"""# {packed.path.name}

A packed form of the sentence-embedding model `{source.path.name}` for memdex's own encoder,
built by `scripts/package_model.py` (memdex/query/meaning/packaged.py). Licensed as the model
is: Apache License 2.0 (LICENSE).

- Source: `model.safetensors` with sha256 `{weights_hash}`, and its configuration and
  tokenizer files, which are copied here unchanged.
- Changes: the linear layers' weights are quantised to int8, one step per output column;
  `{PACKED_FILE}` holds them with the float32 word and position embeddings (token type 0
  added), biases and norms. `{PACKED_VOCAB}` is the tokenizer's vocabulary as memdex reads it.
- Its vectors are the source's run at int8, and memdex names them alike: `{packed.name}`.
"""
