"""Where a sentence-embedding model comes from and what its own files say about it.

A model is a folder in the sentence-transformers layout: ``config.json``, ``tokenizer.json`` and
``model.safetensors`` from the Hugging Face model, plus ``modules.json``, ``1_Pooling/config.json``,
``sentence_bert_config.json`` and ``config_sentence_transformers.json`` from sentence-transformers.
Nothing here imports numpy or the network stack until it is needed.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
import struct
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, BinaryIO, Literal

from memdex.errors import InvalidParameter, MemdexError

# The model memdex ships (memdex/models/): all-MiniLM-L6-v2 as memdex runs it at int8, the
# same vectors under the same name (scripts/package_model.py builds it; docs/model.md).
# It is the model when none is named: no download, no network.
PACKAGED_MODEL = "all-MiniLM-L6-v2-int8"
# The Hugging Face name of the model the packaged one is made from (its full-precision form).
HUB_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
# How a user points memdex at a folder. Kept here so the CLI and the messages agree.
MODEL_OPTION = "--model"
MODEL_ENV = "MEMDEX_EMBED_MODEL"  # MEMDEX_MODEL is the Claude model of answers

REQUIRED_FILES = ("config.json", "tokenizer.json", "model.safetensors")
WEIGHTS_FILE = "model.safetensors"
# A packed model's weights (memdex/query/meaning/packaged.py): every tensor as the forward
# pass runs it, at int8. A folder holds this file or WEIGHTS_FILE.
PACKED_FILE = "memdex-int8.safetensors"
PACKED_VOCAB = "memdex-wordpiece.txt"  # its vocabulary as wordpiece.py reads it
# Files that decide the vectors besides the weights: their content keys the model's name, and a
# packed model keeps them as they are (packaged.py).
CONFIG_FILES = (
    "config.json",
    "tokenizer.json",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "1_Pooling/config.json",
)
_HUB_FILES = ["*.json", "model.safetensors"]
SUPPORTED_MODEL_TYPES = ("bert",)
SUPPORTED_ARCHITECTURES = ("BertModel",)
BGE_QUERY_INSTRUCTION = "Represent this sentence for searching relevant passages: "

Pooling = Literal["mean", "cls"]
Precision = Literal["int8", "fp32"]
PRECISIONS: tuple[Precision, ...] = ("int8", "fp32")
# How the linear layers run, for an index that has no vectors of the model yet (an index keeps
# the precision it has). int8 (per output channel, each token's activations scaled on their
# own) embeds with a third less CPU than fp32 (16.1 against 24.3 ms a Serena chunk). Of a
# chunk's opening alone it ranked a little lower than fp32 on the dev halves, within noise
# (fused: SciFact nDCG@10 0.694 -> 0.691, Serena recall@10 0.891 -> 0.878, one query of 75);
# of whole chunks, as embed.DEFAULT_COVERAGE reads them, it ranks as fp32 does (dev, fused,
# int8 against fp32: SciFact 0.720 both, Serena 0.916 both, chats 0.921 both, LoCoMo 0.874
# against 0.871), so the saving is spent on coverage (#30).
DEFAULT_PRECISION: Precision = "int8"
PRECISION_ENV = "MEMDEX_EMBED_PRECISION"
_PRECISION_SUFFIX = {"int8": "-int8", "fp32": ""}  # fp32 names are those of before int8 existed


@dataclass(frozen=True)
class ModelSpec:
    "What a model folder says about itself: enough to tokenise, run and pool without guessing"

    path: Path
    name: str  # stable across runs for the same files and precision: it keys stored vectors
    dim: int
    max_length: int  # word pieces per text, [CLS] and [SEP] included
    pooling: Pooling
    normalize: bool
    do_lower_case: bool
    query_prefix: str
    passage_prefix: str
    num_layers: int
    num_heads: int
    layer_norm_eps: float
    precision: Precision = "fp32"
    weights_name: str = WEIGHTS_FILE  # PACKED_FILE for a packed model

    @property
    def packed(self) -> bool:
        "Is it a packed model (int8 weights made by memdex, no full-precision ones)?"
        return self.weights_name == PACKED_FILE

    @property
    def identity(self) -> str:
        "The model's name without its precision: the same files give the same identity"
        return self.name.removesuffix(_PRECISION_SUFFIX[self.precision])

    def at(self, precision: Precision) -> ModelSpec:
        "The same model run at another precision (its name says which)"
        if self.packed and precision != "int8":
            raise MemdexError(_packed_only(self.path, precision))
        return replace(self, precision=precision, name=self.identity + _PRECISION_SUFFIX[precision])

    @property
    def weights_file(self) -> Path:
        return self.path / self.weights_name

    @property
    def tokenizer_file(self) -> Path:
        return self.path / "tokenizer.json"


def cache_dir() -> Path:
    "memdex's cache folder: ``$XDG_CACHE_HOME/memdex`` (``~/.cache/memdex`` by default)."
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache").expanduser() / "memdex"


def derived_places(spec: ModelSpec, name: str, writing: bool = False) -> list[Path]:
    """Where a file memdex derives from a model's files (its arranged weights, its vocabulary)
    may be, in the order tried: beside the model, then memdex's cache folder. To write one,
    beside the model only when its folder is writable by its mode, not only by who we are:
    root may write anywhere, and a folder made read-only is not ours."""
    beside = spec.path / name
    if spec.packed:  # the package's folder is not memdex's to write, nor to find stale files in
        return [cache_dir() / "models" / name]
    if writing:
        mode = spec.path.stat().st_mode
        if not (mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH) and os.access(spec.path, os.W_OK)):
            return [cache_dir() / "models" / name]
    return [beside, cache_dir() / "models" / name]


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", ".", "~")) or name.count("/") > 1 or (os.sep != "/" and os.sep in name)


def _how_to_point() -> str:
    return (
        f"point memdex at a folder holding the model's files with {MODEL_OPTION} PATH or {MODEL_ENV}=PATH "
        "(the folder needs config.json, tokenizer.json and model.safetensors)"
    )


def packaged_path() -> Path:
    "The folder of the model memdex ships (PACKAGED_MODEL), inside the installed package."
    return Path(__file__).resolve().parents[2] / "models" / PACKAGED_MODEL


def resolve_model(name_or_path: str | None = None) -> Path:
    """The folder holding a model: the packaged one for None, an existing folder as is, else a
    Hugging Face hub name.

    A hub name is looked up in the local Hugging Face cache first; only when it is not there,
    and HF_HUB_OFFLINE is not set, is it downloaded (its JSON files and model.safetensors).
    A bare name such as ``all-MiniLM-L6-v2`` means ``sentence-transformers/all-MiniLM-L6-v2``.
    A folder comes back absolute, symlinks resolved: the index stores where the model is,
    and a search run from another folder must find it there.
    """
    if name_or_path is None:
        packaged = packaged_path()
        if not (packaged / PACKED_FILE).is_file():
            raise MemdexError(
                f"The model memdex ships is missing from {packaged} (a broken install: reinstall "
                f"memdex); or {_how_to_point()}."
            )
        return packaged
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path.resolve()
    if _looks_like_path(name_or_path):
        raise MemdexError(f"Model folder {name_or_path} does not exist; {_how_to_point()}.")
    repo_id = name_or_path if "/" in name_or_path else f"sentence-transformers/{name_or_path}"
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        raise MemdexError(
            f"Cannot fetch the model {repo_id!r}: huggingface_hub is not installed; {_how_to_point()}."
        ) from None
    cached = None
    try:
        cached = Path(snapshot_download(repo_id, allow_patterns=_HUB_FILES, local_files_only=True))
    except Exception:  # not in the cache: a LocalEntryNotFoundError, or a bad name
        pass
    if cached and all((cached / file).is_file() for file in REQUIRED_FILES):
        return cached
    if _hub_offline():
        if cached:  # incomplete: load_spec names the missing file
            return cached
        why = "it is not in the Hugging Face cache and HF_HUB_OFFLINE is set"
    else:
        try:
            return Path(snapshot_download(repo_id, allow_patterns=_HUB_FILES))
        except Exception as error:  # network, unknown repository, gated model, disk full
            detail = f"{type(error).__name__}: {(str(error).strip().splitlines() or [''])[0][:200]}"
            why = f"it is not in the Hugging Face cache and downloading it failed ({detail})"
    raise MemdexError(f"Cannot find the sentence-embedding model {repo_id!r}: {why}; {_how_to_point()}.")


def _packed_only(path: Path, precision: str) -> str:
    return (
        f"The model at {path} is packed at int8 and cannot run at {precision}; for {precision}, "
        f"point {MODEL_OPTION} at the full model's folder (or its Hugging Face name, {HUB_MODEL})."
    )


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise MemdexError(f"Cannot read model file {path}: {error}") from None


def _optional_json(path: Path) -> Any:
    return _read_json(path) if path.is_file() else None


def _base_name(path: Path) -> str:
    "The folder's name, or the repository's name for a Hugging Face cache snapshot"
    resolved = path.resolve()
    repo_dir = resolved.parent.parent.name
    if resolved.parent.name == "snapshots" and repo_dir.startswith("models--"):
        return repo_dir.split("--", 2)[-1]
    return resolved.name


def model_name(path: Path) -> str:
    """A stable identifier: the folder's name plus a hash of what decides the vectors.

    The hash covers the configuration files, the tokenizer, and the weights' size, first 64 KiB
    (the tensor index) and last MiB; reading all the weights would cost more than loading them.
    A packed model (packaged.py) runs its source's int8 forward pass on the same tensors, so its
    vectors are its source's at int8, bit for bit: its name is its source's, recorded in its file.
    """
    packed = path / PACKED_FILE
    if not (path / WEIGHTS_FILE).is_file() and packed.is_file():
        return _packed_name(packed)
    digest = hashlib.sha256()
    for relative in CONFIG_FILES:
        file = path / relative
        if file.is_file():
            digest.update(relative.encode() + b"\0" + file.read_bytes() + b"\0")
    weights = path / WEIGHTS_FILE
    if weights.is_file():
        size = weights.stat().st_size
        with weights.open("rb") as stream:
            digest.update(str(size).encode() + stream.read(64 << 10))
            stream.seek(max(0, size - (1 << 20)))
            digest.update(stream.read())
    return f"{_base_name(path)}-{digest.hexdigest()[:12]}"


def _packed_name(file: Path) -> str:
    "The name a packed model's file records: its source model's (packaged.build)"
    try:
        with open(file, "rb") as stream:
            header, _ = safetensors_header(stream, os.fstat(stream.fileno()).st_size)
        name = (header.get("__metadata__") or {})["name"]
    except (OSError, ValueError, KeyError, TypeError, struct.error) as error:
        raise MemdexError(f"Cannot read model file {file}: {error}; reinstall memdex.") from None
    if not isinstance(name, str) or not name:
        raise MemdexError(f"Model file {file} records no model name; reinstall memdex.")
    return name


def safetensors_header(stream: BinaryIO, size: int) -> tuple[dict[str, Any], int]:
    """The JSON header of a safetensors file open at its start (``size`` bytes), and its length:
    an 8-byte little-endian length, then the header (tensors' names, dtypes, shapes, offsets)."""
    (header_size,) = struct.unpack("<Q", stream.read(8))
    if header_size > size - 8:
        raise ValueError(f"header of {header_size} bytes in a file of {size}")
    header = json.loads(stream.read(header_size))
    if not isinstance(header, dict):
        raise ValueError("the header is not a JSON object")
    return header, header_size


def default_prefixes(name: str) -> tuple[str, str]:
    """The (query, passage) prefixes a model family was trained with, judged by its name.

    e5 models want ``query: `` and ``passage: ``; bge models want an instruction before queries
    only; MiniLM and gte want none.
    """
    lowered = name.lower()
    if re.search(r"(^|[-_/])e5([-_.]|$)", lowered):
        return "query: ", "passage: "
    if re.search(r"(^|[-_/])bge([-_.]|$)", lowered):
        return BGE_QUERY_INSTRUCTION, ""
    return "", ""


def _prefixes(st_config: Any, name: str) -> tuple[str, str]:
    prompts = st_config.get("prompts") if isinstance(st_config, dict) else None
    if isinstance(prompts, dict) and isinstance(prompts.get("query"), str):
        passage = next(
            (prompts[key] for key in ("passage", "document", "corpus") if isinstance(prompts.get(key), str)),
            "",
        )
        return prompts["query"], passage
    return default_prefixes(name)


def _check_architecture(config: dict[str, Any], file: Path) -> None:
    model_type = config.get("model_type")
    architectures = config.get("architectures") or []
    supported = (
        f"memdex runs model_type {', '.join(map(repr, SUPPORTED_MODEL_TYPES))} with architectures "
        f"{', '.join(SUPPORTED_ARCHITECTURES)} (or another Bert* head, which is ignored), "
        "such as all-MiniLM-L6-v2, bge-small, e5-small and gte-small"
    )
    if model_type not in SUPPORTED_MODEL_TYPES:
        raise MemdexError(
            f"Unsupported model architecture in {file}: model_type {model_type!r}; {supported}."
        )
    if architectures and not any(str(name).startswith("Bert") for name in architectures):
        raise MemdexError(
            f"Unsupported model architecture in {file}: architectures {architectures}; {supported}."
        )
    for key, expected in (("hidden_act", "gelu"), ("position_embedding_type", "absolute")):
        if config.get(key, expected) != expected:
            raise MemdexError(
                f"Unsupported model in {file}: {key} {config[key]!r} (memdex supports {expected!r} only)."
            )


def _pooling(path: Path, modules: Any) -> tuple[Pooling, bool]:
    "The pooling mode and whether vectors are L2-normalised, from modules.json"
    if not isinstance(modules, list):  # a plain Hugging Face model: sentence-transformers means, no norm
        return "mean", False
    pooling_dir = "1_Pooling"
    normalize = False
    for module in modules:
        kind = str(module.get("type", ""))
        if kind.endswith(".Pooling"):
            pooling_dir = module.get("path") or pooling_dir
        elif kind.endswith(".Normalize"):
            normalize = True
        elif not kind.endswith(".Transformer"):
            raise MemdexError(
                f"Unsupported module in {path / 'modules.json'}: {kind!r}; memdex runs Transformer, "
                "Pooling and Normalize modules only."
            )
    pooling_file = path / pooling_dir / "config.json"
    config = _optional_json(pooling_file)
    if config is None:
        return "mean", normalize
    modes = sorted(
        key.removeprefix("pooling_mode_")
        for key, on in config.items()
        if key.startswith("pooling_mode_") and on is True
    )
    if modes == ["mean_tokens"]:
        return "mean", normalize
    if modes == ["cls_token"]:
        return "cls", normalize
    raise MemdexError(
        f"Unsupported pooling in {pooling_file}: {', '.join(modes) or 'none'}; memdex supports "
        "mean_tokens or cls_token alone."
    )


def precision_of(name: str) -> Precision:
    """The precision a stored model name says its vectors were made at.

    ``all-MiniLM-L6-v2-5736aa6ad758-int8@128`` is int8; a name without the suffix is fp32, as
    every name was before int8 existed.
    """
    base = name.rsplit("@", 1)[0] if "@" in name else name
    return "int8" if base.endswith(_PRECISION_SUFFIX["int8"]) else "fp32"


def check_precision(precision: str) -> Precision:
    for known in PRECISIONS:
        if precision == known:
            return known
    raise InvalidParameter(f"Unknown precision {precision!r}; use one of {', '.join(PRECISIONS)}.")


def load_spec(path: Path | str, precision: Precision | None = None) -> ModelSpec:
    """Read a model folder's files into a ModelSpec, or say which file is missing or unsupported.

    :param precision: how to run it (None: DEFAULT_PRECISION); it is part of the spec's name,
        so vectors of one precision are never compared with queries of another
    """
    chosen = check_precision(precision or DEFAULT_PRECISION)
    path = Path(path).expanduser().resolve()  # absolute: ModelSpec.path is stored by `memdex embed`
    if not path.is_dir():
        raise MemdexError(f"Model folder {path} does not exist; {_how_to_point()}.")
    weights_name = WEIGHTS_FILE
    if not (path / WEIGHTS_FILE).is_file() and (path / PACKED_FILE).is_file():
        weights_name = PACKED_FILE
        if chosen != "int8":
            raise MemdexError(_packed_only(path, chosen))
    for required in REQUIRED_FILES:
        if required == WEIGHTS_FILE:
            required = weights_name
        if not (path / required).is_file():
            hint = ""
            if required == "model.safetensors" and (path / "pytorch_model.bin").is_file():
                hint = " (it has pytorch_model.bin, which cannot be read without torch)"
            raise MemdexError(
                f"Model file {path / required} is missing{hint}; memdex needs "
                f"{', '.join(REQUIRED_FILES)} in the model folder."
            )
    config_file = path / "config.json"
    config = _read_json(config_file)
    if not isinstance(config, dict):
        raise MemdexError(f"Cannot read model file {config_file}: not a JSON object")
    _check_architecture(config, config_file)
    try:
        dim = int(config["hidden_size"])
        num_layers = int(config["num_hidden_layers"])
        num_heads = int(config["num_attention_heads"])
        max_positions = int(config.get("max_position_embeddings", 512))
        eps = float(config.get("layer_norm_eps", 1e-12))
    except (KeyError, TypeError, ValueError) as error:
        raise MemdexError(f"Model file {config_file} lacks a usable {error}") from None
    if dim % num_heads:
        raise MemdexError(
            f"Model file {config_file}: hidden_size {dim} is not a multiple of {num_heads} heads"
        )
    st_config = _optional_json(path / "sentence_bert_config.json") or {}
    max_length = min(int(st_config.get("max_seq_length") or max_positions), max_positions)
    pooling, normalize = _pooling(path, _optional_json(path / "modules.json"))
    st_extra = _optional_json(path / "config_sentence_transformers.json")
    query_prefix, passage_prefix = _prefixes(st_extra, _base_name(path))
    return ModelSpec(
        path=path,
        name=model_name(path) + _PRECISION_SUFFIX[chosen],
        dim=dim,
        max_length=max_length,
        pooling=pooling,
        normalize=normalize,
        do_lower_case=bool(st_config.get("do_lower_case", False)),
        query_prefix=query_prefix,
        passage_prefix=passage_prefix,
        num_layers=num_layers,
        num_heads=num_heads,
        layer_norm_eps=eps,
        precision=chosen,
        weights_name=weights_name,
    )
