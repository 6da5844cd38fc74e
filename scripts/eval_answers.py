#!/usr/bin/env python3
"""Answer mode, measured: rounds taken, what refinement adds, and whether citations resolve.

On the Serena query set (scripts/eval_data/serena-queries.jsonl, 150 queries), the chat
questions (scripts/eval_data/chats, 150 questions over 12 long conversations), LoCoMo's
development half (../shared/data/locomo-dev, 760 questions over 5 long conversations) and
LongMemEval_S's development part (../shared/data/longmemeval-dev, 119 questions, each over
its own history of 38-62 sessions, asked on its own day):

- rounds: how many search rounds each question takes, and why refinement stopped;
- what refinement adds: Serena recall@10 of the ranked results, and for every set whether
  the right evidence is among the sources an answer sends (Serena: the relevant file; chats:
  the gold turns inside the passages; LoCoMo and LongMemEval: the share of the gold or
  evidence turns whose text is inside a passage), with one round and with up to three;
- citations: every citation of every answer must name a source that was sent -- counted,
  with the unresolved ones listed (there should be none).

Answers are extractive unless a key is set: with ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL
for a gateway or a local server) the same run checks Claude's citations.

Examples:

    python scripts/eval_answers.py                  # every set, JSON on stdout
    python scripts/eval_answers.py --set chats --split test
"""

from __future__ import annotations

import json
import re
import sqlite3
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import bench
import click
from eval import (
    CHATS,
    DATA,
    LOCOMO,
    LONGMEMEVAL,
    SERENA_QUERIES,
    chat_exports,
    fresh,
    locomo_questions,
    longmemeval_questions,
    mean,
    recall_at,
    share_inside,
    today,
)

import memdex
from memdex.answer.answers import Answer
from memdex.answer.claude import Settings
from memdex.answer.synthesis import answer

CHAT_BUDGET = 2000  # tokens of passages sent, as the chat search evaluation uses


# Any bracket with a number in it, not right after a word or a backtick: a broader net than
# what memdex reads as a citation, so a form it misses is still counted here.
ANY_CITATION = re.compile(r"(?<![\w`])\[([^\[\]\n]*\d[^\[\]\n]*)\]")


def citations_of(a: Answer) -> tuple[int, list[int]]:
    "(citations counted, the numbers in the answer's text or lists naming no source that was sent)."
    sent = {s.n for s in a.sources}
    listed = [c for d in a.details for c in d.citations]
    texts = [a.summary, *(d.text for d in a.details)]
    inline = [int(n) for t in texts for c in ANY_CITATION.findall(t) for n in re.findall(r"\d+", c)]
    return len(listed), [c for c in listed + inline if c not in sent]


# The index (and the day) one question is answered in: one index for a whole set, or (as
# LongMemEval) each question its own.
Opener = Callable[[dict[str, Any]], Any]


def one_index(conn: sqlite3.Connection) -> Opener:
    "Every question of a set answered in the same index."

    @contextmanager
    def opened(item: dict[str, Any]) -> Iterator[sqlite3.Connection]:
        yield conn

    return opened


def run_set(
    conn_for: Opener,
    items: list[dict[str, Any]],
    text_of: str,
    evidence: Any,
    budget: int | None,
    settings: Settings,
    use_llm: bool,
    min_relevance: float | None = None,
    kind_of: str | None = None,
) -> dict[str, Any]:
    "Answer every item, once in one round and once in up to three; ``kind_of``: evidence by this field too."
    rounds: Counter[int] = Counter()
    stops: Counter[str] = Counter()
    counted, unresolved, methods = 0, [], Counter()
    ev1, ev3, ms = [], [], []
    for item in items:
        question = item[text_of]
        with conn_for(item) as conn:
            t0 = time.perf_counter()
            full = answer(
                conn,
                question,
                max_tokens=budget,
                rounds=3,
                use_llm=use_llm,
                settings=settings,
                min_relevance=min_relevance,
            )
            ms.append((time.perf_counter() - t0) * 1000)
            one = answer(
                conn, question, max_tokens=budget, rounds=1, use_llm=False, min_relevance=min_relevance
            )
        rounds[len(full.refinement.rounds)] += 1
        stops[_stop_kind(full.refinement.stopped)] += 1
        methods[full.method] += 1
        n, bad = citations_of(full)
        counted += n
        unresolved += [{"id": item["id"], "citation": c} for c in bad]
        ev1.append(float(evidence(one, item)))
        ev3.append(float(evidence(full, item)))
    kinds: dict[str, list[tuple[float, float]]] = {}
    for item, e1, e3 in zip(items, ev1, ev3, strict=True):
        if kind_of:
            kinds.setdefault(item[kind_of], []).append((e1, e3))
    by_kind = {
        k: {"1_round": mean([e for e, _ in v]), "up_to_3_rounds": mean([e for _, e in v])}
        for k, v in sorted(kinds.items())
    }
    return {
        **({"by_" + kind_of: by_kind} if kind_of else {}),
        "questions": len(items),
        "rounds": dict(sorted(rounds.items())),
        "mean_rounds": mean([k for k, v in rounds.items() for _ in range(v)]),
        "stopped": dict(stops.most_common()),
        "evidence_in_sources": {"1_round": mean(ev1), "up_to_3_rounds": mean(ev3)},
        "citations": counted,
        "unresolved_citations": unresolved,
        "methods": dict(methods),
        "ms_per_answer_median": round(sorted(ms)[len(ms) // 2], 1) if ms else 0.0,
    }


def _stop_kind(reason: str) -> str:
    for kind in ("relevance", "new result", "overlapped", "rounds", "nothing left", "nothing found"):
        if kind in reason:
            return kind
    return reason


def serena(
    work: Path, split: str | None, settings: Settings, use_llm: bool, min_relevance: float | None
) -> dict[str, Any]:
    root = DATA / "serena-memories"
    db_path = fresh(work / "serena.db")
    idx = memdex.Index(db_path)
    idx.index(root)
    conn = idx.conn
    items = [json.loads(line) for line in SERENA_QUERIES.read_text().splitlines() if line.strip()]
    items = [q for q in items if not split or q["split"] == split]

    def key(path: str) -> str:
        return str(Path(path).relative_to(root))

    def evidence(a: Answer, q: dict[str, Any]) -> bool:
        return bool({key(s.hit.path) for s in a.sources} & set(q["relevant"]))

    out = run_set(one_index(conn), items, "query", evidence, None, settings, use_llm, min_relevance)
    from memdex.answer.refine import refine

    recall = {}
    for rounds in (1, 3):
        ranked = [
            [key(h.path) for h in refine(conn, q["query"], max_rounds=rounds).result.hits] for q in items
        ]
        recall[f"{rounds}_round{'s' if rounds > 1 else ''}"] = mean(
            [recall_at(r, q["relevant"], 10) for r, q in zip(ranked, items, strict=True)]
        )
    out["recall@10"] = recall
    conn.close()
    return out


def chats(
    work: Path, split: str | None, settings: Settings, use_llm: bool, min_relevance: float | None
) -> dict[str, Any]:
    order = chat_exports(work / "chat-exports")
    db_path = fresh(work / "chats.db")
    idx = memdex.Index(db_path)
    idx.index(work / "chat-exports")
    conn = idx.conn
    items = [
        json.loads(line) for line in (CHATS / "questions.jsonl").read_text().splitlines() if line.strip()
    ]
    items = [q for q in items if not split or q["split"] == split]

    def evidence(a: Answer, q: dict[str, Any]) -> bool:
        ids = order[q["conversation"]]
        wanted = {ids.index(g) for g in q["gold"]}
        covered = {
            i
            for s in a.sources
            if s.hit.key == q["conversation"]
            for p in s.passages
            if "msg_start" in p.meta
            for i in range(p.meta["msg_start"], p.meta["msg_end"] + 1)
            if i not in p.meta.get("window", {}).get("cut", [])  # a message cut short is not evidence
        }
        return wanted <= covered

    out = run_set(one_index(conn), items, "question", evidence, CHAT_BUDGET, settings, use_llm, min_relevance)
    conn.close()
    return out


def locomo(
    work: Path, split: str | None, settings: Settings, use_llm: bool, min_relevance: float | None
) -> dict[str, Any]:
    """LoCoMo's development half (../shared/data/locomo-dev): the share of each question's gold
    turns whose whole text is inside a passage sent (whitespace collapsed, case folded)."""
    db_path = fresh(work / "locomo.db")
    idx = memdex.Index(db_path)
    idx.index(LOCOMO / "chatgpt", LOCOMO / "claude")
    conn = idx.conn
    items = locomo_questions(split)

    def evidence(a: Answer, q: dict[str, Any]) -> float:
        return share_inside([p.text for s in a.sources for p in s.passages], q["gold_turns"])

    out = run_set(one_index(conn), items, "query", evidence, CHAT_BUDGET, settings, use_llm, min_relevance)
    conn.close()
    return out


def longmemeval(
    work: Path, split: str | None, settings: Settings, use_llm: bool, min_relevance: float | None
) -> dict[str, Any]:
    """LongMemEval_S's development part (../shared/data/longmemeval-dev): each question answered
    from its own history, on the day it is asked ($MEMDEX_NOW); the share of its evidence turns
    whose whole text is inside a passage sent, by question type too."""
    items = longmemeval_questions(split)
    folder = work / "longmemeval-answers"
    folder.mkdir(parents=True, exist_ok=True)
    for q in items:
        with memdex.Index(fresh(folder / f"{q['id']}.db")) as idx:
            idx.index(LONGMEMEVAL / "conversations" / q["id"])

    @contextmanager
    def opened(q: dict[str, Any]) -> Iterator[sqlite3.Connection]:
        with today(q["question_date_iso"]), memdex.Index(folder / f"{q['id']}.db") as idx:
            yield idx.conn

    def evidence(a: Answer, q: dict[str, Any]) -> float:
        gold = [t["text"] for t in q["evidence_turns"]]
        return share_inside([p.text for s in a.sources for p in s.passages], gold)

    return run_set(
        opened, items, "question", evidence, CHAT_BUDGET, settings, use_llm, min_relevance, "question_type"
    )


@click.command()
@click.option(
    "--set",
    "which",
    type=click.Choice(["all", "serena", "chats", "locomo", "longmemeval"]),
    default="all",
    show_default=True,
)
@click.option("--split", type=click.Choice(["dev", "test"]), help="Questions of one split only.")
@click.option("--no-llm", is_flag=True, help="Extractive answers even when a key is set.")
@click.option(
    "--min-relevance",
    type=click.FloatRange(0, 1),
    help="The relevance a source needs to be sent (default: memdex's, 0.5; 0: every source).",
)
@click.option(
    "--work", type=click.Path(file_okay=False, path_type=Path), help="Keep exports and indexes here."
)
def main(which: str, split: str | None, no_llm: bool, min_relevance: float | None, work: Path | None) -> None:
    """Measure answer mode (JSON on stdout).

    Example:

        python scripts/eval_answers.py --set serena --split test
    """
    bench.words_only()
    settings = Settings.from_env()
    with tempfile.TemporaryDirectory() as tmp:
        folder = work or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        result: dict[str, Any] = {"memdex": memdex.__version__, "split": split or "all"}
        if which in ("all", "serena"):
            result["serena"] = serena(folder, split, settings, not no_llm, min_relevance)
        if which in ("all", "chats"):
            result["chats"] = chats(folder, split, settings, not no_llm, min_relevance)
        if which in ("all", "locomo"):
            result["locomo"] = locomo(folder, split, settings, not no_llm, min_relevance)
        if which in ("all", "longmemeval"):
            result["longmemeval"] = longmemeval(folder, split, settings, not no_llm, min_relevance)
        click.echo(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
