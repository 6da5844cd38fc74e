"""``memdex keywords``: activation keywords for a memory file, and the index row to add.

A keyword earns its place by being in the file and rare in the rest of the folder: each
word (hyphenated compounds and identifiers kept whole: ``pr-review``, ``CWE-22``,
``NON_COMPLIANT``) is counted where it appears -- the title three times, headings and bold
text twice, the body once -- and weighted by how few other memories use it (idf). Words the
folder's indexes already use as keywords are the vocabulary people search with, and count
half again. One word per stem; 10 to 15 of them.

The row must pass the index it would join: at least 40% of its keywords may appear in no
other row there, so shared words give way to the next distinctive ones until it does. The
file's own current rows are left out of everything, so a proposal never just repeats them.
Nothing is written: the row is printed for a person to paste.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from memdex.ingest.markdown import split_frontmatter
from memdex.ingest.structure import structure_of
from memdex.serena.lint import MAX_KEYWORDS, MIN_KEYWORDS, MIN_UNIQUE
from memdex.serena.tiers import Folder, Index
from memdex.tokens import STOPWORDS, fold, stem

MIN_COUNT, MAX_COUNT = MIN_KEYWORDS, MAX_KEYWORDS  # what lint asks of a skill row
_TERM = re.compile(r"(?<![\w.-])[A-Za-z][A-Za-z0-9]*(?:[-_.][A-Za-z0-9]+)*")
_FILLER = frozenset(
    """also use used uses using see note notes example examples new make makes made need needs
    needed get gets one two first last etc via e.g i.e must may might can cannot will would should
    always never every each like just only even still yet already within without into onto upon
    section file files line lines text content thing things way ways time times case cases part
    true false yes none null todo""".split()
)
_WEIGHTS = {"title": 3.0, "heading": 2.0, "bold": 2.0, "code": 1.0, "body": 1.0}


@dataclass
class Proposal:
    file: str
    keywords: list[str]
    index: str | None  # the index the row would join
    unique_share: float  # of the keywords, the share no other row of that index uses
    current: list[str]  # the file's keywords in its index rows today

    @property
    def row(self) -> str:
        name = str(PurePosixPath(self.file).with_suffix(""))
        return f"| {' '.join(self.keywords)} | [{name}]({self.file}) |"

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "keywords": self.keywords,
            "row": self.row,
            "index": self.index,
            "unique_share": round(self.unique_share, 3),
            "current": self.current,
        }


def terms_of(text: str) -> Counter[str]:
    "Weighted counts of a memory's candidate words, by where they appear."
    meta, body, _ = split_frontmatter(text)
    counts: Counter[str] = Counter()
    title = meta.get("title") if isinstance(meta.get("title"), str) else ""
    lines = body.splitlines()
    shape = structure_of("\n".join(lines))  # read from the very lines counted here
    levels = {h.line: h.level for h in shape.headings}
    places = [(title, "title")] if title else []
    for i, line in enumerate(lines):
        if i not in shape.fenced:  # code is not what a memory is about
            level = levels.get(i)
            places.append((line, "body" if level is None else "title" if level == 1 else "heading"))
    for line, where in places:
        s = re.sub(r"\]\([^)]*\)|https?://\S+", " ", line.strip())  # link targets and URLs are not words
        for bold in re.findall(r"\*\*([^*]+)\*\*", s):
            _count(counts, bold, _WEIGHTS["bold"] - _WEIGHTS["body"])
        for code in re.findall(r"`([^`]+)`", s):
            _count(counts, code, _WEIGHTS["code"])
        _count(counts, re.sub(r"`[^`]+`", " ", s), _WEIGHTS[where])
    return counts


def _count(counts: Counter[str], text: str, weight: float) -> None:
    for word in _TERM.findall(text):
        word = word.strip("-_.")
        lower = word.casefold()
        if len(word) < 3 and not word.isupper() or lower in STOPWORDS or lower in _FILLER:
            continue
        if re.fullmatch(r"[0-9a-f]{7,40}", lower) and re.search(r"\d", lower):
            continue  # a commit hash
        counts[word] += weight  # type: ignore[assignment]


class Proposer:
    "Keyword proposals for the memories of one folder (document frequencies computed once)."

    def __init__(self, folder: Folder) -> None:
        self.folder = folder
        self.terms = {rel: terms_of(folder.text(rel)) for rel in folder.memories}
        self.df: Counter[str] = Counter()
        for counts in self.terms.values():
            self.df.update({fold(w) for w in counts})

    def propose(self, rel: str, min_unique: float = MIN_UNIQUE) -> Proposal:
        folder = self.folder
        own = {(link.index, link.line) for link in folder.links_to(rel)}
        current = list(dict.fromkeys(k for link in folder.links_to(rel) for k in link.keywords))
        vocabulary = {
            fold(k)
            for i in folder.indexes.values()
            for r in i.rows()
            if (i.rel, r.line) not in own
            for k in r.keywords
        }
        n = max(len(self.terms), 1)
        by_stem: dict[str, tuple[float, str]] = {}
        for word, count in (self.terms.get(rel) or terms_of(folder.text(rel))).items():
            lower = fold(word)
            idf = math.log((n + 1) / (self.df.get(lower, 0) + 0.5))
            score = (1 + math.log(count)) * idf * (1.5 if lower in vocabulary else 1.0)
            key = stem(lower)
            if key not in by_stem or score > by_stem[key][0]:
                by_stem[key] = (
                    score,
                    word if word.isupper() or not word.islower() and "-" in word else lower,
                )
        ranked = [w for _, w in sorted(by_stem.values(), key=lambda sw: (-sw[0], sw[1]))]
        if not ranked:
            return Proposal(rel, [], None, 0.0, current)
        top = by_stem[stem(fold(ranked[0]))][0]
        strong = sum(1 for s, _ in by_stem.values() if s >= 0.25 * top)
        count = max(MIN_COUNT, min(MAX_COUNT, strong))
        index = folder.domain_of(rel) or self._nearest_index(rel)
        others = _keywords_of(index, own) if index else set()
        chosen = ranked[:count]
        spare = [w for w in ranked[count:] if fold(w) not in others]
        while chosen and _share(chosen, others) < min_unique and spare:
            shared = [w for w in reversed(chosen) if fold(w) in others]
            chosen[chosen.index(shared[0])] = spare.pop(0)
        return Proposal(rel, chosen, index.rel if index else None, _share(chosen, others), current)

    def _nearest_index(self, rel: str) -> Index | None:
        "For a memory in no domain index: the index whose memories sit in its folder, most of them."
        parent = str(PurePosixPath(rel).parent)
        votes: Counter[str] = Counter()
        for index in self.folder.indexes.values():
            if index.is_top:
                continue
            for link in index.links:
                if link.target and str(PurePosixPath(link.target).parent) == parent:
                    votes[index.rel] += 1
        if not votes:
            return None
        return self.folder.indexes[votes.most_common(1)[0][0]]


def _keywords_of(index: Index, own: set[tuple[str, int]]) -> set[str]:
    return {fold(k) for r in index.rows() if (index.rel, r.line) not in own for k in r.keywords}


def _share(words: list[str], others: set[str]) -> float:
    return sum(1 for w in words if fold(w) not in others) / len(words) if words else 0.0


def resolve_file(folder: Folder, file: Path) -> str:
    "A memory file's path relative to the folder, or a clear error."
    from memdex.errors import InvalidParameter

    try:
        rel = file.resolve().relative_to(folder.root.resolve()).as_posix()
    except ValueError as exc:
        raise InvalidParameter(f"{file} is not inside {folder.root}.") from exc
    if rel not in folder.memories:
        raise InvalidParameter(f"{file} is not a memory file of {folder.root} (an index, or not markdown?).")
    return rel
