"""BERT's WordPiece for a few short texts of plain ASCII, in Python: what a search's query needs.

`tokenizers` reads a model's tokenizer.json whole (a vocabulary of 30,000 pieces and an
automaton for its added tokens) in 40 ms, a sixth of a `memdex search` with meaning, to split
a dozen words. For a model whose tokenizer.json is BERT's own arrangement (BertNormalizer,
BertPreTokenizer, WordPiece, ``[CLS] … [SEP]``) this module keeps the vocabulary as a text
file beside the model or in memdex's cache folder (read in 3 ms) and splits ASCII text as
`tokenizers` does, id for id (tested over every Serena chunk, SciFact claim and LoCoMo
question, and every ASCII character). On ASCII, BERT's normaliser only drops control
characters, turns tabs and line ends into spaces and lowercases: no accents, no Chinese
characters, no Unicode tables whose versions could differ. Any other text, and any other
tokenizer, goes to `tokenizers`.
"""

from __future__ import annotations

import hashlib
import json
import string
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdex.query.meaning.model import PACKED_VOCAB, ModelSpec, derived_places
from memdex.utils import atomic_write

FORMAT = "memdex-wordpiece-1"  # change it when the file's layout changes
PUNCTUATION = frozenset(string.punctuation)  # ASCII's: BertPreTokenizer isolates each
_CONTROL = {code: None for code in [*range(0x20), 0x7F] if chr(code) not in "\t\n\r"}
_SPACES = str.maketrans({"\t": " ", "\n": " ", "\r": " "})


@dataclass(frozen=True)
class WordPiece:
    "A BERT vocabulary and the few settings that shape how ASCII text is split"

    vocab: dict[str, int]
    lowercase: bool
    unk: int
    cls: int
    sep: int
    prefix: str  # "##": marks a piece that continues a word
    max_chars: int  # a longer word is one unknown piece
    added: tuple[str, ...]  # added tokens matched in raw text: a text holding one goes to `tokenizers`

    def ids(self, text: str, max_length: int) -> list[int] | None:
        """The ids `tokenizers` gives text, [CLS] and [SEP] included and cut to max_length;
        None when the text is not plain ASCII or holds an added token."""
        if not text.isascii():
            return None
        cleaned = text.translate(_CONTROL).translate(_SPACES)
        if any(token in text or token in cleaned for token in self.added):
            return None
        text = cleaned
        if self.lowercase:
            text = text.lower()
        pieces: list[int] = []
        room = max_length - 2
        for word in _words(text):
            pieces += self._pieces(word)
            if len(pieces) >= room:
                break
        return [self.cls, *pieces[:room], self.sep]

    def _pieces(self, word: str) -> list[int]:
        "Longest match first, as BERT's WordPiece: a word with any unknown part is one [UNK]"
        if len(word) > self.max_chars:
            return [self.unk]
        found: list[int] = []
        start = 0
        while start < len(word):
            end = len(word)
            while end > start:
                piece = word[start:end] if start == 0 else self.prefix + word[start:end]
                if piece in self.vocab:
                    found.append(self.vocab[piece])
                    break
                end -= 1
            else:
                return [self.unk]
            start = end
        return found


def _words(text: str) -> list[str]:
    "BertPreTokenizer on ASCII: split on spaces, each punctuation mark a word of its own"
    words: list[str] = []
    for chunk in text.split():
        start = 0
        for index, char in enumerate(chunk):
            if char in PUNCTUATION:
                if index > start:
                    words.append(chunk[start:index])
                words.append(char)
                start = index + 1
        if start < len(chunk):
            words.append(chunk[start:])
    return words


def load(spec: ModelSpec) -> WordPiece | None:
    """The model's WordPiece from the kept vocabulary file, made from tokenizer.json the first
    time; None when its tokenizer is not BERT's own arrangement (or cannot be read). A packed
    model carries its vocabulary file (PACKED_VOCAB): nothing is made or written."""
    if spec.packed:
        packed = _read(spec.path / PACKED_VOCAB)
        if packed is not None:
            return packed
    try:
        name = _file_name(spec)
    except OSError:
        return None
    for place in derived_places(spec, name):
        kept = _read(place)
        if kept is not None:
            return kept
    text = vocabulary_text(spec)
    if text is None:
        return None
    for place in derived_places(spec, name, writing=True):
        try:
            place.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(place, text, 0o644)  # others who read the model may read it
            break
        except OSError:  # a read-only folder: try the next place; none works, keep it in memory
            continue
    return _parse(text)


def vocabulary_text(spec: ModelSpec) -> str | None:
    """The vocabulary file's text, from the model's tokenizer.json; None when its tokenizer is
    not BERT's own arrangement (or cannot be read)."""
    try:
        config = json.loads(spec.tokenizer_file.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # `tokenizers` will say what is wrong with the file
    settings = plain_bert(config)
    if settings is None:
        return None
    vocab: dict[str, int] = config["model"]["vocab"]
    tokens = sorted(vocab, key=vocab.__getitem__)
    if [vocab[token] for token in tokens] != list(range(len(tokens))) or any(
        "\n" in token or "\r" in token or not token for token in tokens
    ):
        return None  # ids with gaps, or pieces a line cannot hold
    header = json.dumps({"format": FORMAT, "count": len(tokens), **settings})
    return header + "\n" + "\n".join(tokens) + "\n"


def plain_bert(config: dict[str, Any]) -> dict[str, Any] | None:
    "The settings of a tokenizer.json in BERT's own arrangement, else None"
    normalizer = config.get("normalizer") or {}
    model = config.get("model") or {}
    post = config.get("post_processor") or {}
    if (
        normalizer.get("type") != "BertNormalizer"
        or not normalizer.get("clean_text", True)
        or (config.get("pre_tokenizer") or {}).get("type") != "BertPreTokenizer"
        or model.get("type") != "WordPiece"
        or not isinstance(model.get("vocab"), dict)
    ):
        return None
    vocab = model["vocab"]
    specials = _specials(post)
    unk = model.get("unk_token", "[UNK]")
    if specials is None or unk not in vocab or any(token not in vocab for token in specials):
        return None
    added = []
    for token in config.get("added_tokens") or []:
        if token.get("single_word") or token.get("lstrip") or token.get("rstrip"):
            return None
        if token.get("normalized", True) and not token.get("special"):
            return None  # matched after normalising: rare in BERT models, left to `tokenizers`
        added.append(token["content"])
    cls, sep = specials
    return {
        "lowercase": bool(normalizer.get("lowercase", True)),
        "unk": vocab[unk],
        "cls": vocab[cls],
        "sep": vocab[sep],
        "prefix": model.get("continuing_subword_prefix", "##"),
        "max_chars": int(model.get("max_input_chars_per_word", 100)),
        "added": added,
    }


def _specials(post: dict[str, Any]) -> tuple[str, str] | None:
    "[CLS] and [SEP] of a single text's template, when it is exactly the two around the text"
    if post.get("type") == "BertProcessing":
        return post["cls"][0], post["sep"][0]
    if post.get("type") != "TemplateProcessing":
        return None
    single = post.get("single") or []
    if len(single) != 3 or "Sequence" not in single[1]:
        return None
    first, last = single[0].get("SpecialToken"), single[2].get("SpecialToken")
    if not first or not last:
        return None
    tokens = post.get("special_tokens") or {}
    if any(len((tokens.get(item["id"]) or {}).get("ids") or []) != 1 for item in (first, last)):
        return None
    return first["id"], last["id"]


def _file_name(spec: ModelSpec) -> str:
    "The kept vocabulary's name: the tokenizer file's identity and this layout's version, hashed"
    info = spec.tokenizer_file.stat()
    key = f"{spec.identity}|{info.st_size}|{info.st_mtime_ns}|{FORMAT}"
    return f"memdex-wordpiece-{hashlib.sha256(key.encode()).hexdigest()[:16]}.txt"


def _read(place: Path) -> WordPiece | None:
    try:
        return _parse(place.read_text(encoding="utf-8"))
    except (OSError, ValueError, KeyError, TypeError):
        return None  # missing, truncated or foreign: made again


def _parse(text: str) -> WordPiece:
    header, _, body = text.partition("\n")
    settings = json.loads(header)
    tokens = body[:-1].split("\n")
    if settings.pop("format") != FORMAT or not body.endswith("\n") or settings.pop("count") != len(tokens):
        raise ValueError("not a whole vocabulary file of this layout")
    vocab = {token: index for index, token in enumerate(tokens)}
    for key in ("unk", "cls", "sep"):
        if not 0 <= settings[key] < len(tokens):
            raise ValueError(f"{key} id outside the vocabulary")
    return WordPiece(vocab=vocab, **{**settings, "added": tuple(settings["added"])})
