#!/usr/bin/env python3
"""Deterministic synthetic corpora for benchmarks: MIF memory notes and chat exports.

Same seed, same files, byte for byte, so timings compare across runs and machines. Each
note and conversation carries planted terms (``zqplant<N>``) that benchmarks search for.

Examples:

    python scripts/synth.py notes /tmp/notes --count 2000
    python scripts/synth.py memories /tmp/memories --count 2000
    python scripts/synth.py chats /tmp/chats --count 5000
"""

from __future__ import annotations

import bisect
import itertools
import json
import random
from pathlib import Path

import click

# The head of the vocabulary: words every engineering memory uses. The long tail is made
# of pronounceable invented words, so that, as in real notes, most words are rare: word
# frequencies follow Zipf's law (the k-th word about 1/k as often as the first).
WORDS = (
    "index query cache deploy rollback migration schema token budget latency queue worker retry "
    "backoff webhook secret rotation review branch merge conflict release tag pipeline runner "
    "artifact coverage fixture flaky timeout lock writer reader snapshot backup restore replica "
    "shard partition vacuum checkpoint journal parser tokenizer stemmer synonym cascade ranking "
    "relevance snippet chunk document memory agent session handoff context window summary decision "
    "incident postmortem alert pager dashboard metric trace span sampler budget quota limit plan"
).split()
VOCABULARY = 20_000
ZIPF = 1.07
NAMESPACES = (
    "decisions/project",
    "learnings/project",
    "procedures/user",
    "episodes/user",
    "semantic/preferences",
)
TYPES = ("semantic", "episodic", "procedural")
_ONSETS = "b c d f g h j k l m n p r s t v w z br cr dr fl gr pl pr sk sl sp st tr".split()
_VOWELS = "a e i o u ai ea io ou".split()
_CODAS = ["", "", "n", "r", "s", "l", "m", "t", "x", "nd", "rk", "st"]


class Vocabulary:
    "A deterministic Zipf-distributed vocabulary: common words first, invented ones after."

    def __init__(self, size: int = VOCABULARY, seed: int = 3) -> None:
        rng = random.Random(seed)
        words = list(dict.fromkeys(WORDS))
        seen = set(words)
        while len(words) < size:
            word = "".join(
                rng.choice(_ONSETS) + rng.choice(_VOWELS) + rng.choice(_CODAS)
                for _ in range(rng.randint(2, 3))
            )
            if word not in seen:
                seen.add(word)
                words.append(word)
        self.words = words
        weights = [1 / (k + 1) ** ZIPF for k in range(len(words))]
        total = sum(weights)
        self.cumulative = list(itertools.accumulate(w / total for w in weights))

    def pick(self, rng: random.Random, n: int) -> list[str]:
        return [
            self.words[min(bisect.bisect(self.cumulative, rng.random()), len(self.words) - 1)]
            for _ in range(n)
        ]


_VOCABULARY: Vocabulary | None = None


def vocabulary() -> Vocabulary:
    global _VOCABULARY
    if _VOCABULARY is None:
        _VOCABULARY = Vocabulary()
    return _VOCABULARY


def _sentence(rng: random.Random, words: int) -> str:
    return " ".join(vocabulary().pick(rng, words)).capitalize() + "."


def _paragraph(rng: random.Random) -> str:
    return " ".join(_sentence(rng, rng.randint(8, 16)) for _ in range(rng.randint(2, 5)))


def write_notes(folder: Path, count: int, seed: int = 7) -> list[Path]:
    "``count`` MIF memories (frontmatter, sections) under namespace folders; returns their paths."
    rng = random.Random(seed)
    paths = []
    for i in range(count):
        namespace = NAMESPACES[i % len(NAMESPACES)]
        path = folder / namespace / f"m{i:06d}.memory.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        title = f"{_sentence(rng, 4)[:-1]} zqplant{i}"
        tags = sorted(set(vocabulary().pick(rng, 3)))
        day = 1 + i % 28
        sections = "\n\n".join(
            f"## {_sentence(rng, 3)[:-1]}\n\n{_paragraph(rng)}" for _ in range(rng.randint(1, 4))
        )
        path.write_text(
            f"---\nid: m-{i:06d}\ntype: {TYPES[i % 3]}\nnamespace: {namespace}\n"
            f'created: 2025-{1 + i % 12:02d}-{day:02d}T10:00:00Z\ntitle: "{title}"\n'
            f"tags: [{', '.join(tags)}]\n---\n\n# {title}\n\n{_paragraph(rng)}\n\n{sections}\n",
            encoding="utf-8",
        )
        paths.append(path)
    return paths


SOURCE_TYPES = ("user_explicit", "inferred", "observed", "imported")
AGENTS = ("claude-opus-4", "claude-sonnet-4", "claude-3-opus")


def _stamp(rng: random.Random) -> str:
    return (
        f"2025-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"
        f"T{rng.randint(0, 23):02d}:{rng.randint(0, 59):02d}:00Z"
    )


def write_memories(folder: Path, count: int, seed: int = 13) -> list[Path]:
    """``count`` mnemonic-style memories: the rich frontmatter of MIF level 3 (aliases,
    temporal decay, provenance, citations, extensions) over a short body with a list."""
    rng = random.Random(seed)
    pick = vocabulary().pick
    paths = []
    for i in range(count):
        namespace = NAMESPACES[i % len(NAMESPACES)]
        path = folder / namespace / f"{i:06d}-{'-'.join(pick(rng, 3))}.memory.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        title = f"{_sentence(rng, 4)[:-1]} zqplant{i}"
        created, modified = sorted([_stamp(rng), _stamp(rng)])
        tags = "".join(f"\n  - {t}" for t in sorted(set(pick(rng, rng.randint(2, 5)))))
        aliases = "".join(f'\n  - "{_sentence(rng, 3)[:-1]}"' for _ in range(rng.randint(1, 2)))
        citations = "".join(
            f'\n  - type: documentation\n    title: "{_sentence(rng, 4)[:-1]}"\n'
            f"    url: https://docs.example.org/{'/'.join(pick(rng, 2))}\n"
            f"    relevance: {rng.randint(50, 99) / 100}"
            for _ in range(rng.randint(0, 1))
        )
        frontmatter = (
            f"id: {rng.getrandbits(128):032x}\ntype: {TYPES[i % 3]}\nnamespace: {namespace}\n"
            f'created: {created}\nmodified: {modified}\ntitle: "{title}"\ntags:{tags}\n'
            f"aliases:{aliases}\n"
            f"temporal:\n  valid_from: {created}\n  valid_until: null\n  recorded_at: {created}\n"
            f"  ttl: P{rng.choice((30, 90, 365))}D\n  decay:\n    model: exponential\n"
            f"    halfLife: P30D\n    currentStrength: {rng.randint(10, 99) / 100}\n"
            f"    last_reinforced: {modified}\n  access_count: {rng.randint(0, 40)}\n"
            f"  last_accessed: {modified}\n"
            f"provenance:\n  source_type: {rng.choice(SOURCE_TYPES)}\n"
            f"  source_ref: conversation:conv-{created[:10]}-{rng.randint(1, 999):03d}\n"
            f"  agent: {rng.choice(AGENTS)}\n  confidence: {rng.randint(50, 99) / 100}\n"
            f"  trust_level: {rng.choice(('user_stated', 'verified', 'inferred'))}\n"
            + (f"citations:{citations}\n" if citations else "")
            + f"extensions:\n  subcog:\n    domain: {namespace.split('/')[1]}\n"
            f'    hash: "sha256:{rng.getrandbits(160):040x}"\n'
        )
        bullets = "\n".join(
            f"- **{pick(rng, 1)[0]}**: {_sentence(rng, rng.randint(4, 8))}" for _ in range(rng.randint(2, 3))
        )
        sections = "\n\n".join(
            f"## {_sentence(rng, 2)[:-1]}\n\n{_sentence(rng, rng.randint(8, 16))}"
            for _ in range(rng.randint(0, 1))
        )
        path.write_text(
            f"---\n{frontmatter}---\n\n# {title}\n\n{_sentence(rng, rng.randint(8, 16))}\n\n"
            f"## Details\n\n{bullets}\n\n{sections}\n",
            encoding="utf-8",
        )
        paths.append(path)
    return paths


def queries(notes: int, seed: int = 5) -> list[dict[str, str]]:
    """Search queries for a corpus of ``notes`` notes, of four shapes, ten of each.

    - planted: one ``zqplant<N>`` term, found in exactly one note (a known-item lookup);
    - common: two of the most common words (thousands of matches, the costliest to rank);
    - mixed: a common word and two from the middle of the vocabulary;
    - question: a sentence around two mid-frequency words, with stopwords and a "?".
    """
    rng = random.Random(seed)
    words = vocabulary().words
    head, middle = words[:60], words[200:5000]
    out = []
    for _ in range(10):
        out.append({"shape": "planted", "query": f"zqplant{rng.randrange(notes)}"})
        out.append({"shape": "common", "query": " ".join(rng.sample(head, 2))})
        out.append({"shape": "mixed", "query": " ".join([rng.choice(head), *rng.sample(middle, 2)])})
        a, b = rng.sample(middle, 2)
        out.append({"shape": "question", "query": f"what did we decide about the {a} and {b}?"})
    return out


def _messages(rng: random.Random, i: int) -> list[tuple[str, str]]:
    turns = []
    for t in range(rng.randint(6, 24)):
        role = "user" if t % 2 == 0 else "assistant"
        text = _paragraph(rng) if role == "assistant" else _sentence(rng, rng.randint(6, 14))
        if t == 2:
            text += f" zqplant{i}"
        turns.append((role, text))
    return turns


def write_chats(folder: Path, count: int, seed: int = 11, per_file: int = 500) -> list[Path]:
    "``count`` conversations, alternately as ChatGPT and Claude exports of ``per_file`` each."
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    chatgpt: list[dict] = []
    claude: list[dict] = []
    for i in range(count):
        start = 1735689600 + i * 3600
        turns = _messages(rng, i)
        title = f"{_sentence(rng, 4)[:-1]} {i}"
        if i % 2 == 0:
            mapping: dict[str, dict] = {
                "root": {"id": "root", "message": None, "parent": None, "children": ["n0"]}
            }
            for t, (role, text) in enumerate(turns):
                mapping[f"n{t}"] = {
                    "id": f"n{t}",
                    "parent": "root" if t == 0 else f"n{t - 1}",
                    "children": [f"n{t + 1}"] if t + 1 < len(turns) else [],
                    "message": {
                        "id": f"n{t}",
                        "author": {"role": role},
                        "create_time": start + t * 60,
                        "content": {"content_type": "text", "parts": [text]},
                        "metadata": {},
                    },
                }
            chatgpt.append(
                {
                    "id": f"gpt-{i}",
                    "title": title,
                    "create_time": start,
                    "update_time": start + 3000,
                    "current_node": f"n{len(turns) - 1}",
                    "mapping": mapping,
                }
            )
        else:
            claude.append(
                {
                    "uuid": f"claude-{i}",
                    "name": title,
                    "created_at": "2025-01-01T00:00:00Z",
                    "updated_at": "2025-01-01T01:00:00Z",
                    "chat_messages": [
                        {
                            "uuid": f"c{i}-{t}",
                            "sender": "human" if role == "user" else "assistant",
                            "text": text,
                            "content": [{"type": "text", "text": text}],
                            "created_at": f"2025-01-01T00:{t:02d}:00Z",
                        }
                        for t, (role, text) in enumerate(turns)
                    ],
                }
            )
    paths = []
    for name, records in (("chatgpt", chatgpt), ("claude", claude)):
        for n in range(0, len(records), per_file):
            path = folder / f"{name}-{n // per_file:03d}" / "conversations.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(records[n : n + per_file]), encoding="utf-8")
            paths.append(path)
    return paths


@click.group()
def cli() -> None:
    "Write deterministic synthetic corpora."


@cli.command()
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--count", default=2000, show_default=True)
@click.option("--seed", default=7, show_default=True)
def notes(folder: Path, count: int, seed: int) -> None:
    """MIF memory notes with planted terms.

    Example:

        python scripts/synth.py notes /tmp/notes --count 2000
    """
    click.echo(f"wrote {len(write_notes(folder, count, seed))} notes under {folder}")


@cli.command()
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--count", default=2000, show_default=True)
@click.option("--seed", default=13, show_default=True)
def memories(folder: Path, count: int, seed: int) -> None:
    """mnemonic-style memories: rich MIF frontmatter, short bodies, planted terms.

    Example:

        python scripts/synth.py memories /tmp/memories --count 2000
    """
    click.echo(f"wrote {len(write_memories(folder, count, seed))} memories under {folder}")


@cli.command()
@click.argument("folder", type=click.Path(file_okay=False, path_type=Path))
@click.option("--count", default=5000, show_default=True)
@click.option("--seed", default=11, show_default=True)
def chats(folder: Path, count: int, seed: int) -> None:
    """ChatGPT and Claude exports with planted terms.

    Example:

        python scripts/synth.py chats /tmp/chats --count 5000
    """
    click.echo(f"wrote {count} conversations in {len(write_chats(folder, count, seed))} files under {folder}")


if __name__ == "__main__":
    cli()
