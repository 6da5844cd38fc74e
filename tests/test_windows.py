"""Coverage (query/meaning/windows.py): a chunk read whole, in windows the model can read, each
led by its heading; a fact at the end of a long chunk is found by meaning. With the real
all-MiniLM-L6-v2 tokenizer and model from ../shared/data/models."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from tokenizers import Tokenizer

from memdex.ingest.pipeline import index_paths
from memdex.query.meaning.embed import embed, passage_encoder, vector_model
from memdex.query.meaning.model import ModelSpec, load_spec
from memdex.query.meaning.windows import OVERLAP, Windows
from memdex.store import db

HEADING = "Garden journal > Spring planting"
SENTENCES = [
    f"On day {i} we planted row {i} with tomatoes, basil and marigolds, then watered them at dusk."
    for i in range(40)
]
# Deep in the chunk, past the first 128 word pieces: what only whole coverage reads.
FLOOD = "The basement flooded after the storm and every carpet downstairs was ruined."
QUERY = "water damage in the cellar"  # no word of it in the note


@pytest.fixture(scope="module")
def spec(minilm: Path) -> ModelSpec:
    return load_spec(minilm)


@pytest.fixture(scope="module")
def tokenizer(spec: ModelSpec) -> Tokenizer:
    tok = Tokenizer.from_file(str(spec.tokenizer_file))
    tok.no_truncation()
    tok.no_padding()
    return tok


def _pieces(tokenizer: Tokenizer, text: str) -> int:
    return len(tokenizer.encode(text).ids)  # [CLS] and [SEP] included, as the model reads it


def test_a_long_chunk_is_read_whole_in_windows_the_model_can_read(
    spec: ModelSpec, tokenizer: Tokenizer
) -> None:
    passage = f"{HEADING}\n" + " ".join(SENTENCES)
    (texts,) = Windows(spec, 128, "whole").split([(HEADING, passage)])
    assert texts[0] == passage  # the first window is what coverage "first" reads
    assert len(texts) > 3
    for text in texts[1:]:
        assert text.startswith(HEADING + "\n")  # each later window says what it is part of
        assert _pieces(tokenizer, text) <= 128
    # No gap: each window begins before the one before it ends, the first where the model
    # stops reading the passage (126 word pieces in), and the last ends at the chunk's end.
    reach = tokenizer.encode(passage, add_special_tokens=False).offsets[128 - 2 - 1][1]
    for text in texts[1:]:
        body = text.removeprefix(HEADING + "\n")
        begin = passage.index(body)
        assert begin < reach
        reach = begin + len(body)
    assert reach == len(passage) and texts[-1].endswith(SENTENCES[-1])
    assert _pieces(tokenizer, texts[-1]) > 128 - OVERLAP


def test_a_short_chunk_and_coverage_first_are_one_text(spec: ModelSpec) -> None:
    passage = f"{HEADING}\n" + " ".join(SENTENCES)
    assert Windows(spec, 128, "whole").split([(HEADING, "short text")]) == [["short text"]]
    assert Windows(spec, 128, "first").split([(HEADING, passage)]) == [[passage]]


def _garden_index(folder: Path, db_path: Path) -> sqlite3.Connection:
    notes = folder / "notes"
    notes.mkdir(parents=True)
    body = "\n".join([*SENTENCES[:30], FLOOD, *SENTENCES[30:32]])
    (notes / "garden.md").write_text(f"# Garden journal\n\n## Spring planting\n\n{body}\n")
    (notes / "kitchen.md").write_text("# Kitchen\n\n## Recipes\n\nBake the bread for forty minutes.\n")
    (notes / "car.md").write_text("# Car\n\n## Service\n\nThe tyres were changed in March.\n")
    conn = db.connect(db_path)
    index_paths(conn, [notes])
    return conn


@pytest.mark.slow
def test_a_fact_deep_in_a_long_chunk_is_found_with_whole_coverage(spec: ModelSpec, tmp_path: Path) -> None:
    from memdex.query.engine import Engine
    from memdex.query.meaning.passes import meaning_pass
    from memdex.query.request import Filters

    encoder = passage_encoder(spec)
    similarity = {}
    for coverage in ("first", "whole"):
        conn = _garden_index(tmp_path / coverage, tmp_path / f"{coverage}.db")
        report = embed(conn, encoder, coverage=coverage)  # type: ignore[arg-type]
        assert report.model == vector_model(spec, coverage)  # type: ignore[arg-type]
        garden = conn.execute("SELECT id FROM chunks WHERE text LIKE '%basement%'").fetchone()[0]
        (stored,) = conn.execute("SELECT vector FROM chunk_vectors WHERE chunk_id = ?", (garden,)).fetchone()
        windows = len(stored) // spec.dim
        assert windows == 1 if coverage == "first" else windows > 3
        assert report.windows == report.embedded - 1 + windows
        near = meaning_pass(conn, QUERY, True, Filters().params(), Engine()).near
        similarity[coverage] = next((n.similarity for n in near if n.chunk_id == garden), 0.0)
        if coverage == "whole":
            assert near[0].chunk_id == garden
            # Another file changed: its chunk alone is read, at the coverage the index has.
            (tmp_path / "whole" / "notes" / "car.md").write_text("# Car\n\nTyres changed in April.\n")
            index_paths(conn, [tmp_path / "whole" / "notes"])
            assert embed(conn, encoder).windows == 1  # the car note alone; coverage kept
        conn.close()
    assert similarity["whole"] > similarity["first"] + 0.1


@pytest.mark.slow
def test_memdex_embed_coverage_whole_and_the_index_keeps_it(minilm: Path, tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from memdex.doors.cli import cli

    _garden_index(tmp_path, tmp_path / "garden.db").close()
    model = str(minilm)

    def run(*args: str) -> dict:
        result = CliRunner().invoke(
            cli, ["--db", str(tmp_path / "garden.db"), "embed", "--model", model, *args]
        )
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)  # type: ignore[no-any-return]

    first = run("--coverage", "whole", "--json")
    assert first["model"].endswith("@128w") and first["windows"] > first["embedded"] > 0
    again = run("--json")  # no --coverage: the index's own
    assert again["model"] == first["model"] and again["embedded"] == 0 and again["matrix"] == "current"
