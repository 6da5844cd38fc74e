"""What of a chunk the model reads: its opening only, or all of it in windows.

The model reads at most 128 word pieces (all-MiniLM-L6-v2 was trained on no more), and a
chunk holds up to ~800 tokens. Coverage ``first`` embeds a chunk's heading path and opening,
as memdex did before issue 30; ``whole`` embeds the same first window and then the rest of the
chunk in windows of the same size, each led by the chunk's heading (a window of a section's
fifth paragraph still says what the section is), neighbours overlapping by OVERLAP pieces so
a sentence cut at one window's end is whole in the next. The last window ends at the chunk's
end and is full-size (it overlaps its neighbour more), so no window is a few stray words.
A chunk's score is its best window's (query/meaning/matrix.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property
from typing import TYPE_CHECKING, Literal

from memdex.errors import InvalidParameter

if TYPE_CHECKING:
    from tokenizers import Tokenizer

    from memdex.query.meaning.model import ModelSpec

Coverage = Literal["first", "whole"]
COVERAGES: tuple[Coverage, ...] = ("first", "whole")
# How much of each chunk the model reads, for an index that has no vectors of the model yet
# (an index keeps the coverage it has: `memdex embed --drop` first to change it). All of it
# (windows of 128 word pieces, a chunk scoring its best), with int8's saving spent on it: on
# every set's dev half, fused, int8 whole against fp32 first, in one run each
# (scripts/bench_meaning.py quality --set all): SciFact nDCG@10 0.694 -> 0.720, Serena
# recall@10 0.891 -> 0.916 (paraphrases 0.70 -> 0.76), chats 0.895 -> 0.921, LoCoMo 0.872 ->
# 0.874, at ranking.MEANING_WEIGHT_WHOLE; for 1.4x (Serena) to 2.3x (SciFact) the CPU of fp32
# first, and less than the encoder before issue 30 on Serena (docs/benchmarks.md).
DEFAULT_COVERAGE: Coverage = "whole"
OVERLAP = 16  # word pieces two neighbouring windows share
HEADING_PIECES = 24  # at most this much of the heading leads each later window
MAX_WINDOWS = 16  # a chunk longer than this many windows is read as far as they reach
_SPECIAL = 2  # [CLS] and [SEP]


def check_coverage(coverage: str) -> Coverage:
    if coverage not in COVERAGES:
        raise InvalidParameter(f"Unknown coverage {coverage!r}; use one of {', '.join(COVERAGES)}.")
    return coverage  # type: ignore[return-value]


class Windows:
    "Splits passages into the texts the model reads, for one model and window size."

    def __init__(self, spec: ModelSpec, pieces: int, coverage: Coverage) -> None:
        self.spec = spec
        self.coverage = check_coverage(coverage)
        self.pieces = pieces

    @cached_property
    def _tokenizer(self) -> Tokenizer:
        from tokenizers import Tokenizer

        tokenizer = Tokenizer.from_file(str(self.spec.tokenizer_file))  # the encoder read it already
        tokenizer.no_truncation()
        tokenizer.no_padding()
        return tokenizer

    @cached_property
    def _budget(self) -> int:
        "Word pieces of text a window holds: the model's length less [CLS], [SEP] and the prefix."
        return max(self.pieces - _SPECIAL - self._pieces(self.spec.passage_prefix), 8)

    def split(self, passages: Sequence[tuple[str, str]]) -> list[list[str]]:
        """The texts to embed for each (heading, passage): the passage itself first (the model
        reads its opening), then, with coverage ``whole``, the windows of the rest."""
        if self.coverage == "first":
            return [[passage] for _, passage in passages]
        encodings = self._tokenizer.encode_batch([p for _, p in passages], add_special_tokens=False)
        out = []
        for (heading, passage), encoding in zip(passages, encodings, strict=True):
            offsets = encoding.offsets
            if len(offsets) <= self._budget:
                out.append([passage])
                continue
            lead = self._lead(heading)
            body = max(self._budget - self._pieces(lead), 2 * OVERLAP)
            texts = [passage]
            for start in _starts(len(offsets), self._budget, body)[: MAX_WINDOWS - 1]:
                end = min(start + body, len(offsets))
                part = passage[offsets[start][0] : offsets[end - 1][1]]
                texts.append(f"{lead}\n{part}" if lead else part)
            out.append(texts)
        return out

    def _pieces(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    def _lead(self, heading: str) -> str:
        "The heading as it leads a later window: its first HEADING_PIECES word pieces."
        heading = heading.strip()
        if not heading:
            return ""
        offsets = self._tokenizer.encode(heading, add_special_tokens=False).offsets
        if len(offsets) <= HEADING_PIECES:
            return heading
        return heading[: offsets[HEADING_PIECES - 1][1]]


def _starts(total: int, first: int, body: int) -> list[int]:
    "Where the windows after the first begin, for a text of ``total`` pieces."
    starts: list[int] = []
    start = first - OVERLAP
    while start + body < total:
        starts.append(start)
        start += body - OVERLAP
    starts.append(max(total - body, 0))  # the last ends at the text's end, full-size
    return starts
