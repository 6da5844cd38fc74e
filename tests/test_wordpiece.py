"""A query's word pieces without `tokenizers` (memdex/query/meaning/wordpiece.py): the same ids
as `tokenizers` gives on the shared MiniLM's tokenizer.json, over real text written by others
(Serena memories, SciFact claims and abstracts, LoCoMo questions), every ASCII character and
random ASCII; anything else is left to `tokenizers`."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("numpy")

from tokenizers import Tokenizer  # noqa: E402

from memdex.query.meaning import wordpiece  # noqa: E402
from memdex.query.meaning.encoder import Encoder  # noqa: E402
from memdex.query.meaning.model import cache_dir, load_spec  # noqa: E402
from tests.conftest import shared  # noqa: E402

MAX_LENGTH = 128


@pytest.fixture(scope="module")
def model(minilm: Path) -> Path:
    return minilm


@pytest.fixture(scope="module")
def reference(model: Path) -> Tokenizer:
    tokenizer = Tokenizer.from_file(str(model / "tokenizer.json"))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_LENGTH)
    return tokenizer


def _real_texts() -> list[str]:
    "Every SciFact claim and LoCoMo question; 3,000 paragraphs of Serena memories and SciFact abstracts"
    texts = [path.read_text(encoding="utf-8") for path in sorted(shared("serena-memories").rglob("*.md"))]
    with shared("scifact", "corpus.jsonl").open(encoding="utf-8") as lines:
        texts += [json.loads(line)["text"] for _, line in zip(range(300), lines, strict=False)]
    paragraphs = [part for text in texts for part in text.split("\n\n") if part.strip()]
    chosen = random.Random(30).sample(paragraphs, 3000)
    with shared("scifact", "queries-train.jsonl").open(encoding="utf-8") as lines:
        chosen += [json.loads(line)["text"] for line in lines]
    with shared("locomo-dev", "gold.jsonl").open(encoding="utf-8") as lines:
        chosen += [json.loads(line)["query"] for line in lines]
    return chosen


def test_ids_are_those_of_tokenizers_on_real_ascii_text(model: Path, reference: Tokenizer) -> None:
    spec = load_spec(model)
    pieces = wordpiece.load(spec)
    assert pieces is not None
    texts = [text for text in _real_texts() if text.isascii()]
    assert len(texts) > 4000
    prepared = [variant for text in texts for variant in (text, "query: " + text.lower())]
    expected = reference.encode_batch(prepared)
    for text, encoding in zip(prepared, expected, strict=True):
        assert pieces.ids(text, MAX_LENGTH) == encoding.ids, text[:200]


def test_ids_are_those_of_tokenizers_on_every_ascii_character(model: Path, reference: Tokenizer) -> None:
    pieces = wordpiece.load(load_spec(model))
    assert pieces is not None
    alphabet = "".join(map(chr, range(128)))
    chosen = random.Random(30)
    texts = [alphabet, *alphabet, *(c + "word" + c + "s" for c in alphabet)]
    texts += ["".join(chosen.choice(alphabet) for _ in range(chosen.randint(0, 300))) for _ in range(1500)]
    words = ["rename", "symbols", "un", "##able", "x" * 101, "a" * 100, "NEAR(", "AND", '"', "\t\r\n"]
    texts += [" ".join(chosen.choice(words) for _ in range(chosen.randint(0, 60))) for _ in range(300)]
    texts += ["[CLS]", "[cls]", "a [SEP] b", "[MASK]ed", "the" * 2000, " ".join(["deploy"] * 400)]
    for text in texts:
        expected = reference.encode(text).ids
        ours = pieces.ids(text, MAX_LENGTH)
        assert ours is None or ours == expected, repr(text[:200])
    assert pieces.ids("[MASK]ed", MAX_LENGTH) is None  # an added token: left to `tokenizers`
    assert pieces.ids("a [sep] b", MAX_LENGTH) == reference.encode("a [sep] b").ids


def test_other_text_and_other_tokenizers_go_to_tokenizers(model: Path, tmp_path: Path) -> None:
    pieces = wordpiece.load(load_spec(model))
    assert pieces is not None
    for text in ("café au lait", "東京の天気", "naïve", "emoji 🙂", "zero\u200bwidth"):
        assert pieces.ids(text, MAX_LENGTH) is None
    folder = tmp_path / "model"
    shutil.copytree(model, folder)
    config = json.loads((folder / "tokenizer.json").read_text())
    config["pre_tokenizer"] = {"type": "Whitespace"}  # not BERT's own arrangement
    (folder / "tokenizer.json").write_text(json.dumps(config))
    assert wordpiece.load(load_spec(folder)) is None


def test_an_encoder_gives_a_query_the_same_vector_either_way(model: Path) -> None:
    "The quick path is taken for a query and skipped for many texts; the vectors are the same"
    encoder = Encoder(load_spec(model), backend="numpy", threads=1)
    query = "How are symbols renamed across a project?"
    quick = encoder.encode_queries([query])
    assert "_tokenizer" not in vars(encoder)  # `tokenizers` never loaded
    many = encoder.encode_queries([query] * 9)  # more than a query: `tokenizers`
    assert "_tokenizer" in vars(encoder)
    assert (quick[0] == many[0]).all()


def test_the_vocabulary_file_is_kept_reused_and_made_again_when_broken(
    model: Path, reference: Tokenizer, own_cache: Path
) -> None:
    spec = load_spec(model)
    assert wordpiece.load(spec) is not None
    (kept,) = (cache_dir() / "models").glob("memdex-wordpiece-*.txt")  # the model's folder is read-only
    assert (
        kept.read_text().count("\n") == len(json.loads(spec.tokenizer_file.read_text())["model"]["vocab"]) + 1
    )
    stamp = kept.stat().st_mtime_ns
    assert wordpiece.load(spec) is not None and kept.stat().st_mtime_ns == stamp  # read, not made
    whole = kept.read_text()
    kept.write_text(whole[: whole.index("\n", 5000) + 1])  # cut after a line
    again = wordpiece.load(spec)
    assert (
        again is not None
        and again.ids("rename symbols", MAX_LENGTH) == reference.encode("rename symbols").ids
    )
    assert kept.read_text() == whole  # made again
