#!/usr/bin/env python3
"""Every word a person writes is a query that answers (issue 35), measured on ../shared/data.

- ``sweep``: one-word queries through ``memdex.Index.search`` on an index of the shared corpora
  (Serena memories, the chat exports and agent sessions, the mnemonic memories): words of
  the passages it holds, words held out of it (SciFact's), and the -s, -ed, -ing, -ly and
  -ment forms of both. Counts the queries that raise, and how many were answered by a typo fix.
- ``families``: word families of the corpora's vocabulary, grouped by the Snowball English
  stemmer, half of them families SQLite's porter tokenizer splits (deploy/deployment); a
  note holds one member, and every other member is asked for it. Found as written: the note
  is among the results and no typo fix was needed.
- ``cjk``: notes in Chinese and Japanese, asked by a word inside them.

Each prints JSON. Run it with another checkout's memdex (its own venv) to compare.

Examples:

    python scripts/eval_words.py sweep --limit 15000
    python scripts/eval_words.py families
    python scripts/eval_words.py cjk
"""

from __future__ import annotations

import json
import random
import re
import sqlite3
import statistics
import sys
import tempfile
import time
import traceback
from collections import defaultdict
from pathlib import Path

import bench
import click
import Stemmer

import memdex

HERE = Path(__file__).resolve().parent
DATA = (HERE.parent.parent / "shared" / "data").resolve()
CORPORA = ("serena-memories", "chats", "mnemonic")
_WORD = re.compile(r"[^\W\d_]{3,}")  # words of letters, three or more
SUFFIXES = ("s", "ed", "ing", "ly", "ment")


def vocabulary(folders: list[Path], texts: tuple[str, ...] | list[str] = ()) -> dict[str, int]:
    "Lower-case words of letters in the files under ``folders`` (and ``texts``), with their counts."
    counts: dict[str, int] = defaultdict(int)
    for folder in folders:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix in (".md", ".json", ".jsonl", ".txt", ".csv"):
                for w in _WORD.findall(path.read_text("utf-8", errors="replace")):
                    counts[w.lower()] += 1
    for text in texts:
        for w in _WORD.findall(text):
            counts[w.lower()] += 1
    return dict(counts)


def build_index(folder: Path) -> memdex.Index:
    index = memdex.Index(folder / "words.db")
    started = time.perf_counter()
    index.index(*(DATA / name for name in CORPORA))
    click.echo(f"indexed the shared corpora in {time.perf_counter() - started:.1f} s", err=True)
    return index


@click.group()
def cli() -> None:
    "Word-level checks of memdex on the shared corpora (JSON out)."
    bench.words_only()


@cli.command()
@click.option("--limit", default=15_000, show_default=True, help="Queries asked, at most.")
@click.option("--seed", default=35, show_default=True)
def sweep(limit: int, seed: int) -> None:
    """One-word queries: indexed words, held-out words, and their inflected forms.

    Example:

        python scripts/eval_words.py sweep --limit 15000
    """
    rng = random.Random(seed)
    with tempfile.TemporaryDirectory() as tmp:
        index = build_index(Path(tmp))
        # the words of the passages the index holds (docs/sql.md: the chunks table)
        chunks = index.conn.execute("SELECT heading || ' ' || text FROM chunks")
        held = sorted(vocabulary([], [text for (text,) in chunks]))
        with open(DATA / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
            abstracts = [json.loads(line)["text"] for _, line in zip(range(2000), f, strict=False)]
        out = sorted(set(vocabulary([], abstracts)) - set(held))
        held_words = rng.sample(held, min(len(held), limit // 12))
        out_words = rng.sample(out, min(len(out), limit // 12))
        kind = {
            w + s: ("held" if w in held_words else "held out") + (f" +{s}" if s else "")
            for w in held_words + out_words
            for s in ("", *SUFFIXES)
        }
        queries = list(kind)[:limit]
        rng.shuffle(queries)
        answered: dict[str, list[int]] = defaultdict(lambda: [0, 0])  # kind -> [with results, asked]
        raised: list[dict[str, str]] = []
        fixed = suggested = found = 0
        times: list[float] = []
        for q in queries:
            started = time.perf_counter()
            try:
                result = index.search(q, limit=5)
            except Exception as exc:  # the point of the sweep: count them, with what raised
                raised.append({"query": q, "error": f"{type(exc).__name__}: {str(exc)[:200]}"})
                if len(raised) <= 3:
                    traceback.print_exc(limit=3)
                continue
            times.append(time.perf_counter() - started)
            found += bool(result.hits)
            answered[kind[q]][0] += bool(result.hits)
            answered[kind[q]][1] += 1
            if result.typos:
                fixed += bool(result.typos["searched_instead"])
                suggested += not result.typos["searched_instead"]
        click.echo(
            json.dumps(
                {
                    "memdex": memdex.__version__,
                    "queries": len(queries),
                    "raised": len(raised),
                    "raised_examples": raised[:20],
                    "answered_with_results": found,
                    "answered_by_kind": {k: f"{a}/{n}" for k, (a, n) in sorted(answered.items())},
                    "typos_searched_instead": fixed,
                    "typos_suggested": suggested,
                    "median_ms": round(statistics.median(times) * 1000, 2) if times else None,
                },
                indent=2,
            )
        )


def porter_stems(words: list[str]) -> dict[str, str]:
    "Each word's stem by SQLite's own porter tokenizer (what memdex indexed with until issue 35)."
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(w, tokenize='porter unicode61 remove_diacritics 2')")
    conn.executemany("INSERT INTO t (rowid, w) VALUES (?, ?)", [(i + 1, w) for i, w in enumerate(words)])
    conn.execute("CREATE VIRTUAL TABLE v USING fts5vocab(t, 'instance')")
    return {words[doc - 1]: term for term, doc in conn.execute("SELECT term, doc FROM v")}


@cli.command()
@click.option("--families", "wanted", default=200, show_default=True, help="Families tried, at most.")
@click.option("--seed", default=35, show_default=True)
def families(wanted: int, seed: int) -> None:
    """Word families: a note holds one member; is it found by each other member, as written?

    Example:

        python scripts/eval_words.py families --families 200
    """
    rng = random.Random(seed)
    counts = vocabulary([DATA / name for name in CORPORA])
    words = sorted(w for w, n in counts.items() if n >= 2 and len(w) >= 4 and w.isascii())
    snowball = dict(zip(words, Stemmer.Stemmer("english").stemWords(words), strict=True))
    porter = porter_stems(words)
    groups: dict[str, list[str]] = defaultdict(list)
    for w in words:
        groups[snowball[w]].append(w)
    multi = [sorted(g) for g in groups.values() if len(g) >= 2]
    split = [g for g in multi if len({porter[w] for w in g}) > 1]
    whole = [g for g in multi if len({porter[w] for w in g}) == 1]
    half = wanted // 2
    chosen = rng.sample(split, min(len(split), half)) + rng.sample(whole, min(len(whole), wanted - half))
    with tempfile.TemporaryDirectory() as tmp:
        notes = Path(tmp) / "notes"
        notes.mkdir()
        held_by = {}
        for i, family in enumerate(chosen):
            member = max(family, key=lambda w: (counts[w], w))  # the commonest form is written
            held_by[i] = member
            (notes / f"f{i:04d}.md").write_text(f"# Note {i}\n\nThe text says {member} here.\n")
        index = memdex.Index(Path(tmp) / "families.db")
        index.index(notes)
        asked = as_written = by_typo = 0
        misses = []
        for i, family in enumerate(chosen):
            for word in family:
                if word == held_by[i]:
                    continue
                asked += 1
                try:
                    result = index.search(word, limit=10)
                except Exception as exc:  # counted: a search that raises found nothing
                    misses.append({"held": held_by[i], "asked": word, "raised": type(exc).__name__})
                    continue
                hit = any(Path(h.path).name == f"f{i:04d}.md" for h in result.hits)
                fixed = bool(result.typos and result.typos["searched_instead"])
                if hit and not fixed:
                    as_written += 1
                else:
                    by_typo += hit and fixed
                    misses.append({"held": held_by[i], "asked": word, "found_by_typo_fix": hit and fixed})
    click.echo(
        json.dumps(
            {
                "memdex": memdex.__version__,
                "families": len(chosen),
                "porter_splits": min(len(split), half),
                "queries": asked,
                "found_as_written": as_written,
                "share": round(as_written / asked, 4) if asked else None,
                "found_only_by_typo_fix": by_typo,
                "misses": misses[:40],
            },
            indent=2,
        )
    )


CJK_NOTES = {
    "meeting.md": "# 会議\n\n東京でのミーティングは来週の火曜日です。\n",
    "cafe.md": "# 咖啡馆\n\n我们在北京的咖啡馆讨论了部署计划。\n",
    "mixed.md": "# Build notes\n\nPythonで書いたスクリプトを deploy する。Kubernetes の設定は後で。\n",
    "korean.md": "# 회의\n\n서울에서 배포 계획을 논의했습니다.\n",
}
CJK_QUERIES = {
    "東京": "meeting.md",
    "ミーティング": "meeting.md",
    "火曜日": "meeting.md",
    "東京でのミーティング": "meeting.md",
    "北京": "cafe.md",
    "咖啡馆": "cafe.md",
    "部署计划": "cafe.md",
    "スクリプト": "mixed.md",
    "python": "mixed.md",
    "deployment": "mixed.md",
    "設定": "mixed.md",
    "서울": "korean.md",
    "배포": "korean.md",
}


@cli.command()
def cjk() -> None:
    """Chinese, Japanese and Korean notes, asked by words inside them.

    Example:

        python scripts/eval_words.py cjk
    """
    with tempfile.TemporaryDirectory() as tmp:
        notes = Path(tmp) / "notes"
        notes.mkdir()
        for name, text in CJK_NOTES.items():
            (notes / name).write_text(text, encoding="utf-8")
        index = memdex.Index(Path(tmp) / "cjk.db")
        index.index(notes)
        rows = []
        for query, want in CJK_QUERIES.items():
            result = index.search(query, limit=3)
            first = Path(result.hits[0].path).name if result.hits else None
            rows.append({"query": query, "want": want, "first": first, "typos": result.typos is not None})
    found = sum(r["first"] == r["want"] for r in rows)
    click.echo(
        json.dumps(
            {"memdex": memdex.__version__, "found_first": f"{found}/{len(rows)}", "rows": rows}, indent=2
        )
    )


if __name__ == "__main__":
    sys.exit(cli())
