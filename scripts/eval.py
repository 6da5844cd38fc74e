#!/usr/bin/env python3
"""Ranking quality of memdex, each figure beside a plain SQLite FTS5 baseline on the same files.

- SciFact (BEIR, train split): nDCG@10 and recall@100. The corpus is written as markdown
  notes, one per abstract with its title in the frontmatter, and indexed by memdex.
- Serena memories: recall@10 and MRR on scripts/eval_data/serena-queries.jsonl, by query
  type (direct, paraphrase, question) and split (dev, test).
- Chats: long multi-session conversations (scripts/eval_data/chats) written as ChatGPT and
  Claude exports; for each question, are its gold turns among the chunks
  `memdex search --granularity chunk --max-tokens 2000` returns? Beside plain FTS5 over
  8-turn chunks under the same budget.
- LoCoMo's development half and LongMemEval_S's development part (../shared/data): the
  same measure, the share of each question's gold turns inside what a chunk search hands out
  within 2,000 tokens; for LongMemEval also whether every answer session is among the first 5
  conversations, and NDCG@10 over them, each question on its own index and day.

The baseline is what a user gets from SQLite alone: one FTS5 row per file (porter), the
query's words as an OR of quoted terms, ordered by bm25. A naive word-count ranking is shown
for the Serena set too.

Examples:

    python scripts/eval.py                       # both sets, JSON on stdout
    python scripts/eval.py --set serena --split dev
    python scripts/eval.py --set scifact --via-cli   # through `memdex search --batch`
"""

from __future__ import annotations

import json
import math
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TypeVar

import bench
import click

import memdex

HERE = Path(__file__).resolve().parent
DATA = (HERE.parent.parent / "shared" / "data").resolve()
SERENA_QUERIES = HERE / "eval_data" / "serena-queries.jsonl"
_WORD = re.compile(r"[^\W_]+")

Ranker = Callable[[list[dict]], list[list[str]]]  # queries -> ranked keys per query
T = TypeVar("T")


# -- metrics --------------------------------------------------------------------------------
def ndcg_at(ranked: list[str], relevant: dict[str, int], k: int = 10) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at(ranked: list[str], relevant: Iterable[str], k: int) -> float:
    wanted = set(relevant)
    return len(wanted & set(ranked[:k])) / len(wanted) if wanted else 0.0


def reciprocal_rank(ranked: list[str], relevant: Iterable[str]) -> float:
    wanted = set(relevant)
    return next((1.0 / (i + 1) for i, doc in enumerate(ranked) if doc in wanted), 0.0)


def fresh(db_path: Path) -> Path:
    "An index path with no file behind it: every evaluation builds its index from scratch."
    for old in db_path.parent.glob(db_path.name + "*"):
        old.unlink()
    return db_path


def mean(values: list[float]) -> float:
    return round(sum(values) / len(values), 4) if values else 0.0


# -- rankers --------------------------------------------------------------------------------
def memdex_ranker(
    db_path: Path,
    key_of: Callable[[dict], str],
    limit: int,
    granularity: str = "chat",
    semantic: bool | None = False,
) -> Ranker:
    def rank(queries: list[dict]) -> list[list[str]]:
        index = index_at(db_path)
        out = []
        for q in queries:
            request = memdex.SearchRequest(
                q["query"], limit=limit, granularity=granularity, semantic=semantic
            )
            hits = index.search(request).hits
            out.append(_dedupe(key_of(h.to_dict()) for h in hits))
        return out

    return rank


def dense_ranker(db_path: Path, key_of: Callable[[dict], str], limit: int) -> Ranker:
    "Meaning alone: the documents of the nearest chunks, nearest first (no words at all)."
    from memdex.query.meaning.passes import meaning_pass
    from memdex.query.request import Filters

    def rank(queries: list[dict]) -> list[list[str]]:
        from memdex.store import db

        index = index_at(db_path)
        conn = index.conn
        out = []
        for q in queries:
            near = meaning_pass(conn, q["query"], True, Filters().params(), index.engine).near
            ids = json.dumps(list(dict.fromkeys(n.document_id for n in near)))
            paths = {r["id"]: r["path"] for r in conn.execute(db.query("hit_documents"), {"ids": ids})}
            keys = _dedupe(key_of({"path": paths[n.document_id]}) for n in near)
            out.append(keys[:limit])
        return out

    return rank


def meaning_rankers(
    db_path: Path, key_of: Callable[[dict], str], limit: int, model: Path | None
) -> dict[str, Ranker]:
    "With --model: words and meaning fused, and meaning alone, beside the words' own ranking."
    if model is None:
        return {}
    return {
        "memdex_meaning": memdex_ranker(db_path, key_of, limit, semantic=True),
        "dense_only": dense_ranker(db_path, key_of, limit),
    }


def build(db_path: Path, roots: list[Path], model: Path | None, keep: bool) -> dict:
    "Index the roots (and embed them with --model) unless --keep finds the index already built."
    out: dict = {}
    if not (keep and db_path.exists()):
        fresh(db_path)
        with memdex.Index(db_path) as index:
            out["index_seconds"] = index.index(*roots)["seconds"]
    if model is not None:
        with memdex.Index(db_path) as index:
            report = index.embed(str(model))
            chunks = index.status()["counts"]["chunks"]
        out["embed"] = {**report.to_dict(), "chunks": chunks}
    return out


# One engine for the whole run, shared by every set's index: it stays, as a program that
# searches thousands of times does (its query encoder moves to onnxruntime after its second
# search by meaning), and its encoders serve every set.
ENGINE = memdex.Engine(stays=True)
_INDEXES: dict[Path, memdex.Index] = {}


def index_at(db_path: Path) -> memdex.Index:
    "The set's index, one for every ranker of this run."
    if db_path not in _INDEXES:
        _INDEXES[db_path] = memdex.Index(db_path, engine=ENGINE)
    return _INDEXES[db_path]


def cli_ranker(db_path: Path, key_of: Callable[[dict], str], limit: int) -> Ranker:
    "The same searches through `memdex search --batch`, as an outside evaluator runs them."

    def rank(queries: list[dict]) -> list[list[str]]:
        lines = "".join(
            json.dumps({"id": i, "query": q["query"], "limit": limit}) + "\n" for i, q in enumerate(queries)
        )
        proc = subprocess.run(
            [sys.executable, "-m", "memdex", "--db", str(db_path), "search", "--batch", "-"],
            input=lines,
            capture_output=True,
            text=True,
            check=True,
        )
        by_id = {row["id"]: row for row in map(json.loads, proc.stdout.splitlines())}
        return [_dedupe(key_of(h) for h in by_id[i].get("results", [])) for i in range(len(queries))]

    return rank


def fts5_baseline(docs: dict[str, str], limit: int) -> Ranker:
    "Plain SQLite FTS5: one row per file, porter, OR of the query's words, bm25."
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE d USING fts5(key UNINDEXED, body, tokenize='porter unicode61')")
    conn.executemany("INSERT INTO d (key, body) VALUES (?, ?)", docs.items())

    def rank(queries: list[dict]) -> list[list[str]]:
        out = []
        for q in queries:
            words = _WORD.findall(q["query"].lower())
            match = " OR ".join(f'"{w}"' for w in words) or '""'
            rows = conn.execute("SELECT key FROM d WHERE d MATCH ? ORDER BY bm25(d) LIMIT ?", (match, limit))
            out.append([r[0] for r in rows])
        return out

    return rank


def word_count_baseline(docs: dict[str, str], limit: int) -> Ranker:
    "Naive: rank files by how many times the query's words occur in them."
    lowered = {k: v.lower() for k, v in docs.items()}

    def rank(queries: list[dict]) -> list[list[str]]:
        out = []
        for q in queries:
            words = set(_WORD.findall(q["query"].lower()))
            counts = {k: sum(text.count(w) for w in words) for k, text in lowered.items()}
            out.append([k for k, c in sorted(counts.items(), key=lambda kv: -kv[1]) if c][:limit])
        return out

    return rank


def _dedupe(keys: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(keys))


def timed(ranker: Callable[[list[dict]], list[T]], queries: list[dict]) -> tuple[list[T], float]:
    "What the ranker gives for each query, and the mean milliseconds a query took."
    started = time.perf_counter()
    ranked = ranker(queries)
    return ranked, round((time.perf_counter() - started) / max(len(queries), 1) * 1000, 2)


# -- SciFact --------------------------------------------------------------------------------
def scifact_notes(target: Path) -> dict[str, str]:
    "Write the SciFact corpus as markdown notes (title in frontmatter); return key -> text."
    target.mkdir(parents=True, exist_ok=True)
    docs = {}
    with open(DATA / "scifact" / "corpus.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            title = row["title"].replace('"', "'")
            (target / f"{row['_id']}.md").write_text(
                f'---\ntitle: "{title}"\n---\n\n{row["text"]}\n', "utf-8"
            )
            docs[row["_id"]] = f"{row['title']}\n{row['text']}"
    return docs


def scifact_queries() -> list[dict]:
    qrels: dict[str, dict[str, int]] = {}
    with open(DATA / "scifact" / "qrels" / "train.tsv", encoding="utf-8") as f:
        next(f)
        for line in f:
            qid, doc, score = line.split()
            qrels.setdefault(qid, {})[doc] = int(score)
    queries = []
    with open(DATA / "scifact" / "queries-train.jsonl", encoding="utf-8") as f:
        for line in f:
            row = json.loads(line)
            if row["_id"] in qrels:
                queries.append({"id": row["_id"], "query": row["text"], "qrels": qrels[row["_id"]]})
    return queries


def eval_scifact(
    work: Path, via_cli: bool, limit: int, split: str | None, model: Path | None, keep: bool
) -> dict:
    """SciFact train claims. Split in halves by claim id (even: dev, odd: test) for tuning
    weights on one half and reporting the other; without --split, all 809."""
    docs = scifact_notes(work / "scifact-notes")
    db_path = work / "scifact.db"
    built = build(db_path, [work / "scifact-notes"], model, keep)
    queries = scifact_queries()
    if split:
        queries = [q for q in queries if (int(q["id"]) % 2 == 0) == (split == "dev")]

    def key_of(hit: dict) -> str:
        return Path(hit["path"]).stem

    rankers = {
        "memdex": (cli_ranker if via_cli else memdex_ranker)(db_path, key_of, limit),
        **meaning_rankers(db_path, key_of, limit, model),
        "fts5_baseline": fts5_baseline(docs, limit),
    }
    out: dict = {"queries": len(queries), "split": split or "all", "documents": len(docs), **built}
    for name, ranker in rankers.items():
        ranked, ms = timed(ranker, queries)
        out[name] = {
            "ndcg@10": mean([ndcg_at(r, q["qrels"]) for r, q in zip(ranked, queries, strict=True)]),
            "recall@100": mean([recall_at(r, q["qrels"], 100) for r, q in zip(ranked, queries, strict=True)]),
            "ms_per_query": ms,
        }
    return out


# -- chats ----------------------------------------------------------------------------------
CHATS = HERE / "eval_data" / "chats"
BUDGET = 2000
# (conversation, first message, last message, tokens, messages shown only in part): a message
# a passage cuts short (context around a match) does not count as covered.
Passage = tuple[str, int, int, int, frozenset[int]]


def chat_exports(target: Path) -> dict[str, list[str]]:
    """Write each conversation of eval_data/chats as the export of its platform; return the turn
    ids of each conversation in message order (message i of the export is turn ids[i])."""
    from datetime import datetime, timedelta

    target.mkdir(parents=True, exist_ok=True)
    order: dict[str, list[str]] = {}
    chatgpt, claude = [], []
    for line in (CHATS / "conversations.jsonl").read_text().splitlines():
        conv = json.loads(line)
        turns = []
        for session in conv["sessions"]:
            start = datetime.fromisoformat(session["start"].replace("Z", "+00:00"))
            for n, turn in enumerate(session["turns"]):
                turns.append((turn, start + timedelta(minutes=2 * n)))
        order[conv["id"]] = [t["turn"] for t, _ in turns]
        if conv["platform"] == "chatgpt":
            mapping = {"root": {"id": "root", "message": None, "parent": None, "children": []}}
            previous = "root"
            for turn, moment in turns:
                mapping[turn["turn"]] = {
                    "id": turn["turn"],
                    "parent": previous,
                    "children": [],
                    "message": {
                        "id": turn["turn"],
                        "author": {"role": turn["role"]},
                        "create_time": moment.timestamp(),
                        "content": {"content_type": "text", "parts": [turn["text"]]},
                        "metadata": {},
                    },
                }
                mapping[previous]["children"].append(turn["turn"])
                previous = turn["turn"]
            chatgpt.append(
                {
                    "conversation_id": conv["id"],
                    "title": conv["title"],
                    "current_node": previous,
                    "create_time": turns[0][1].timestamp(),
                    "update_time": turns[-1][1].timestamp(),
                    "mapping": mapping,
                }
            )
        else:
            claude.append(
                {
                    "uuid": conv["id"],
                    "name": conv["title"],
                    "created_at": turns[0][1].isoformat(),
                    "updated_at": turns[-1][1].isoformat(),
                    "chat_messages": [
                        {
                            "uuid": t["turn"],
                            "sender": "human" if t["role"] == "user" else "assistant",
                            "text": t["text"],
                            "content": [{"type": "text", "text": t["text"]}],
                            "created_at": m.isoformat(),
                        }
                        for t, m in turns
                    ],
                }
            )
    (target / "chatgpt").mkdir(exist_ok=True)
    (target / "claude").mkdir(exist_ok=True)
    (target / "chatgpt" / "conversations.json").write_text(json.dumps(chatgpt))
    (target / "claude" / "conversations.json").write_text(json.dumps(claude))
    return order


def chat_baseline(order: dict[str, list[str]], texts: dict[str, str]) -> Callable[[str], list[Passage]]:
    "Plain FTS5 over 8-turn chunks: (conversation, first turn, last turn, tokens), best first."
    conn = sqlite3.connect(":memory:")
    conn.execute(
        "CREATE VIRTUAL TABLE c USING fts5(conv UNINDEXED, a UNINDEXED, b UNINDEXED, body,"
        " tokenize='porter unicode61')"
    )
    for conv, ids in order.items():
        for a in range(0, len(ids), 8):
            body = "\n\n".join(texts[t] for t in ids[a : a + 8])
            conn.execute("INSERT INTO c VALUES (?, ?, ?, ?)", (conv, a, min(a + 7, len(ids) - 1), body))

    def rank(question: str) -> list[Passage]:
        words = _WORD.findall(question.lower())
        match = " OR ".join(f'"{w}"' for w in words) or '""'
        rows = conn.execute(
            "SELECT conv, a, b, length(CAST(body AS BLOB)) FROM c WHERE c MATCH ? ORDER BY bm25(c) LIMIT 100",
            (match,),
        )
        return [(conv, a, b, (n + 3) // 4, frozenset()) for conv, a, b, n in rows]

    return rank


def _within(chunks: list[Passage], budget: int) -> list[Passage]:
    out, total = [], 0
    for chunk in chunks:
        if total + chunk[3] > budget:
            break
        out.append(chunk)
        total += chunk[3]
    return out


def eval_chats(work: Path, split: str | None, model: Path | None, keep: bool) -> dict:
    order = chat_exports(work / "chat-exports")
    texts = {}
    for line in (CHATS / "conversations.jsonl").read_text().splitlines():
        for session in json.loads(line)["sessions"]:
            texts.update({t["turn"]: t["text"] for t in session["turns"]})
    questions = [
        json.loads(line) for line in (CHATS / "questions.jsonl").read_text().splitlines() if line.strip()
    ]
    if split:
        questions = [q for q in questions if q["split"] == split]
    db_path = work / "chats.db"
    built = build(db_path, [work / "chat-exports"], model, keep)
    index = index_at(db_path)
    baseline = chat_baseline(order, texts)

    def chunks_by(semantic: bool) -> Callable[[str], list[Passage]]:
        def memdex_chunks(question: str) -> list[Passage]:
            request = memdex.SearchRequest(
                question, granularity="chunk", max_tokens=BUDGET, limit=100, semantic=semantic
            )
            return [
                (
                    h.key,
                    h.matching_chunks[0]["msg_start"],
                    h.matching_chunks[0]["msg_end"],
                    h.est_tokens,
                    frozenset(h.matching_chunks[0].get("window", {}).get("cut", [])),
                )
                for h in index.search(request).hits
            ]

        return memdex_chunks

    def found(chunks: list[Passage], q: dict) -> bool:
        ids = order[q["conversation"]]
        wanted = {ids.index(g) for g in q["gold"]}
        covered = {
            i
            for conv, a, b, _, cut in chunks
            if conv == q["conversation"]
            for i in range(a, b + 1)
            if i not in cut
        }
        return wanted <= covered

    out: dict = {"questions": len(questions), "split": split or "all", "budget_tokens": BUDGET, **built}
    rankers: list[tuple[str, Callable[[str], list[Passage]]]] = [("memdex", chunks_by(False))]
    if model is not None:
        rankers.append(("memdex_meaning", chunks_by(True)))
    rankers.append(("fts5_8_turn_baseline", lambda q: _within(baseline(q), BUDGET)))
    for name, ranker in rankers:
        passages, ms = timed(lambda qs, rank=ranker: [rank(q["question"]) for q in qs], questions)
        results = [(q, found(p, q)) for q, p in zip(questions, passages, strict=True)]
        section: dict = {"gold_in_budget": mean([float(ok) for _, ok in results]), "ms_per_query": ms}
        for kind in sorted({q["type"] for q in questions}) + ["dev", "test"]:
            part = [ok for q, ok in results if kind in (q["type"], q["split"])]
            if part:
                section[kind] = mean([float(ok) for ok in part])
        if name.startswith("memdex"):
            section["misses"] = [
                {"id": q["id"], "question": q["question"], "gold": q["gold"]} for q, ok in results if not ok
            ]
        out[name] = section
    return out


# -- LoCoMo ---------------------------------------------------------------------------------
LOCOMO = DATA / "locomo-dev"
LOCOMO_CATEGORIES = {1: "multi_hop", 2: "temporal", 3: "open_domain", 4: "single_hop"}


def collapsed(text: str) -> str:
    return " ".join(text.split()).casefold()


def share_inside(texts: list[str], gold: list[str]) -> float:
    """The share of the gold turns whose whole text is inside one of the texts handed out
    (whitespace collapsed, case folded): LoCoMo's and LongMemEval's evidence measure."""
    shown = [collapsed(t) for t in texts]
    return sum(any(collapsed(g) in s for s in shown) for g in gold) / len(gold)


def locomo_questions(split: str | None) -> list[dict]:
    """LoCoMo's development half: 760 questions with the exact text of their gold turns. Split
    in halves by question number within each conversation (even: dev, odd: test)."""
    questions = [json.loads(line) for line in (LOCOMO / "gold.jsonl").read_text().splitlines() if line]
    for q in questions:
        q["split"] = "dev" if int(q["id"].rpartition("-q")[2]) % 2 == 0 else "test"
    return [q for q in questions if split in (None, q["split"])]


def chatgpt_turns(export: Path) -> dict[str, list[str]]:
    "Each conversation's turns in order, as a ChatGPT export holds them (for the baselines)."
    out: dict[str, list[str]] = {}
    for conv in json.loads(export.read_text()):
        mapping, node, turns = conv["mapping"], conv["current_node"], []
        while node and mapping[node].get("message"):
            turns.append(mapping[node]["message"]["content"]["parts"][0])
            node = mapping[node]["parent"]
        out[conv["id"]] = turns[::-1]
    return out


def locomo_turns() -> dict[str, list[str]]:
    "Each session's turns in order, as the exports hold them (for the baseline)."
    out = chatgpt_turns(LOCOMO / "chatgpt" / "conversations.json")
    for conv in json.loads((LOCOMO / "claude" / "conversations.json").read_text()):
        messages = sorted(conv["chat_messages"], key=lambda m: m["created_at"])
        out[conv["uuid"]] = [m["text"] for m in messages]
    return out


def turn_baseline(sessions: dict[str, list[str]], size: int = 8) -> Callable[[str], list[str]]:
    "Plain FTS5 over runs of ``size`` turns, best first within the budget: the passages' texts."
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE c USING fts5(body, tokenize='porter unicode61')")
    for turns in sessions.values():
        for a in range(0, len(turns), size):
            conn.execute("INSERT INTO c VALUES (?)", ("\n\n".join(turns[a : a + size]),))

    def rank(question: str) -> list[str]:
        words = _WORD.findall(question.lower())
        match = " OR ".join(f'"{w}"' for w in words) or '""'
        rows = conn.execute("SELECT body FROM c WHERE c MATCH ? ORDER BY bm25(c) LIMIT 100", (match,))
        out, total = [], 0
        for (body,) in rows:
            tokens = (len(body.encode("utf-8")) + 3) // 4
            if total + tokens > BUDGET:
                break
            out.append(body)
            total += tokens
        return out

    return rank


def passages(index: memdex.Index, question: str, limit: int, semantic: bool) -> list[str]:
    "The texts a chunk search hands out for the question within BUDGET tokens (never more)."
    return [h.text or "" for h in passage_hits(index, question, limit, semantic)]


def passage_hits(index: memdex.Index, question: str, limit: int, semantic: bool) -> list[memdex.Hit]:
    "The results a chunk search hands out for the question within BUDGET tokens (never more)."
    request = memdex.SearchRequest(
        question, granularity="chunk", max_tokens=BUDGET, limit=limit, semantic=semantic, full_text=True
    )
    result = index.search(request)
    if result.total_tokens > BUDGET:
        raise AssertionError(f"{question!r}: {result.total_tokens} tokens, over the budget")
    return result.hits


def eval_locomo(work: Path, split: str | None, model: Path | None, keep: bool, limit: int) -> dict:
    """LoCoMo (Maharana et al., ACL 2024), the five conversations of ../shared/data/locomo-dev as
    ChatGPT and Claude exports. Each question is searched at chunk granularity within 2,000
    tokens; a gold turn counts when its whole text is inside one result's text (whitespace
    collapsed, case folded), and a question scores the share of its gold turns covered."""
    questions = locomo_questions(split)
    db_path = work / "locomo.db"
    built = build(db_path, [LOCOMO / "chatgpt", LOCOMO / "claude"], model, keep)
    index = index_at(db_path)
    baseline = turn_baseline(locomo_turns())

    def passages_by(semantic: bool) -> Callable[[str], list[str]]:
        def texts(question: str) -> list[str]:
            return passages(index, question, limit, semantic)

        return texts

    def covered(passages: list[str], q: dict) -> float:
        return share_inside(passages, q["gold_turns"])

    out: dict = {
        "questions": len(questions),
        "split": split or "all",
        "limit": limit,
        "budget_tokens": BUDGET,
    }
    out.update(built)
    rankers: list[tuple[str, Callable[[str], list[str]]]] = [("memdex", passages_by(False))]
    if model is not None:
        rankers.append(("memdex_meaning", passages_by(True)))
    rankers.append(("fts5_8_turn_baseline", baseline))
    for name, ranker in rankers:
        texts, ms = timed(lambda qs, rank=ranker: [rank(q["query"]) for q in qs], questions)
        scores = [(q, covered(p, q)) for q, p in zip(questions, texts, strict=True)]
        section: dict = {"gold_in_budget": mean([s for _, s in scores]), "ms_per_query": ms}
        for part, wanted in [*LOCOMO_CATEGORIES.items(), ("dev", "dev"), ("test", "test")]:
            chosen = [s for q, s in scores if wanted in (q["split"], LOCOMO_CATEGORIES[q["category"]])]
            if chosen:
                section[LOCOMO_CATEGORIES.get(part, str(part))] = mean(chosen)
        if name.startswith("memdex"):
            section["misses"] = [
                {"id": q["id"], "question": q["query"], "gold": q["gold_turns"], "covered": s}
                for q, s in scores
                if s < 1
            ]
        out[name] = section
    return out


# -- LongMemEval ---------------------------------------------------------------------------
LONGMEMEVAL = DATA / "longmemeval-dev"


def longmemeval_questions(split: str | None) -> list[dict]:
    """LongMemEval_S's development part: 119 questions, each with a haystack of its own. Split
    in halves within each question type, in the order of gold.jsonl (even: dev, odd: test)."""
    questions = [json.loads(line) for line in (LONGMEMEVAL / "gold.jsonl").read_text().splitlines() if line]
    seen: dict[str, int] = {}
    for q in questions:
        n = seen[q["question_type"]] = seen.get(q["question_type"], -1) + 1
        q["split"] = "dev" if n % 2 == 0 else "test"
    return [q for q in questions if split in (None, q["split"])]


@contextmanager
def today(iso_date: str) -> Iterator[None]:
    "Relative dates in a query ('10 days ago') counted from ``iso_date`` ($MEMDEX_NOW)."
    before = os.environ.get("MEMDEX_NOW")
    os.environ["MEMDEX_NOW"] = iso_date
    try:
        yield
    finally:
        if before is None:
            del os.environ["MEMDEX_NOW"]
        else:
            os.environ["MEMDEX_NOW"] = before


def eval_longmemeval(work: Path, split: str | None, model: Path | None, keep: bool, limit: int) -> dict:
    """LongMemEval_S (Wu et al., ICLR 2025), ../shared/data/longmemeval-dev: each question's
    haystack (38-62 sessions as a ChatGPT export) indexed into its own database and searched on
    the day the question is asked, as its README says to score it. ``evidence``: at chunk
    granularity within 2,000 tokens, the share of the question's evidence turns whole inside
    one result's text (as LoCoMo); ``all@5``: every answer conversation among the first 5 at
    chat granularity; ``ndcg@10`` over conversations (LongMemEval's ndcg_any); ``latest first``,
    of the knowledge-update questions (each has an older and a newer answer conversation, the
    newer holding what is true): the newer's first passage handed out before any older one's."""
    questions = longmemeval_questions(split)
    folder = work / "longmemeval"
    folder.mkdir(parents=True, exist_ok=True)
    out: dict = {
        "questions": len(questions),
        "split": split or "all",
        "limit": limit,
        "budget_tokens": BUDGET,
    }
    built = [
        build(folder / f"{q['id']}.db", [LONGMEMEVAL / "conversations" / q["id"]], model, keep)
        for q in questions
    ]
    if all("index_seconds" in b for b in built):
        out["index_seconds"] = round(sum(b["index_seconds"] for b in built), 3)
    if model is not None:
        out["embed"] = {
            k: round(sum(b["embed"][k] for b in built), 3) for k in ("seconds", "cpu_seconds", "chunks")
        }

    Found = tuple[list[str], list[str], float | None]  # texts within the budget, conversations, latest first

    def searched(semantic: bool) -> Callable[[dict], Found]:
        "A question -> (the texts handed out within the budget, the conversations ranked, latest first)."

        def run(q: dict) -> Found:
            with (
                today(q["question_date_iso"]),
                memdex.Index(folder / f"{q['id']}.db", engine=ENGINE) as index,
            ):
                hits = passage_hits(index, q["question"], limit, semantic)
                ranked = index.search(memdex.SearchRequest(q["question"], limit=10, semantic=semantic))
                latest = latest_first([(h.key, h.date or "") for h in hits], q["answer_conversation_ids"])
                return [h.text or "" for h in hits], _dedupe(h.key for h in ranked.hits), latest

        return run

    def baseline(q: dict) -> Found:
        turns = chatgpt_turns(LONGMEMEVAL / "conversations" / q["id"] / "conversations.json")
        return turn_baseline(turns)(q["question"]), [], None

    rankers: list[tuple[str, Callable[[dict], Found]]] = [("memdex", searched(False))]
    if model is not None:
        rankers.append(("memdex_meaning", searched(True)))
    rankers.append(("fts5_8_turn_baseline", baseline))
    for name, ranker in rankers:
        found, ms = timed(lambda qs, rank=ranker: [rank(q) for q in qs], questions)
        scores = []
        for q, (texts, chats, _) in zip(questions, found, strict=True):
            answers = set(q["answer_conversation_ids"])
            scores.append(
                {
                    "evidence": share_inside(texts, [t["text"] for t in q["evidence_turns"]]),
                    "all@5": float(answers <= set(chats[:5])),
                    "ndcg@10": ndcg_at(chats, dict.fromkeys(answers, 1)),
                }
            )
        measures = ("evidence",) if name.startswith("fts5") else ("evidence", "all@5", "ndcg@10")
        section: dict = {m: mean([s[m] for s in scores]) for m in measures}
        if not name.startswith("fts5"):
            ordered = [
                latest
                for q, (_, _, latest) in zip(questions, found, strict=True)
                if q["question_type"] == UPDATES and latest is not None
            ]
            section["latest first"] = {"share": mean(ordered), "questions": len(ordered)}
        section["ms_per_query"] = ms
        for part in sorted({q["question_type"] for q in questions}) + ["dev", "test"]:
            chosen = [
                s for q, s in zip(questions, scores, strict=True) if part in (q["question_type"], q["split"])
            ]
            if chosen:
                section[part] = {m: mean([s[m] for s in chosen]) for m in measures}
        if name.startswith("memdex"):
            section["misses"] = [
                {"id": q["id"], "question": q["question"], **s}
                for q, s in zip(questions, scores, strict=True)
                if s["evidence"] < 1 or s["all@5"] < 1
            ]
        out[name] = section
    return out


UPDATES = "knowledge-update"


def latest_first(shown: list[tuple[str, str]], answers: list[str]) -> float | None:
    """1 when the first of a question's answer conversations among the passages ``shown``
    ((key, date) in the order handed out) is the newest of those shown, else 0; None when fewer
    than two are shown (nothing to order)."""
    dates = {key: date for key, date in shown if key in answers}
    if len(dates) < 2:
        return None
    return float(dates[next(iter(dates))] == max(dates.values()))


# -- Serena ---------------------------------------------------------------------------------
def eval_serena(work: Path, split: str | None, via_cli: bool, model: Path | None, keep: bool) -> dict:
    root = DATA / "serena-memories"
    db_path = work / "serena.db"
    built = build(db_path, [root], model, keep)
    queries = [json.loads(line) for line in SERENA_QUERIES.read_text().splitlines() if line.strip()]
    if split:
        queries = [q for q in queries if q["split"] == split]
    docs = {
        str(p.relative_to(root)): p.read_text("utf-8", errors="replace")
        for p in root.rglob("*.md")
        if not (p.name == "memory-index.md" or p.name.endswith("-index.md"))
    }

    def key_of(hit: dict) -> str:
        return str(Path(hit["path"]).relative_to(root))

    rankers = {
        "memdex": (cli_ranker if via_cli else memdex_ranker)(db_path, key_of, 10),
        **meaning_rankers(db_path, key_of, 10, model),
        "fts5_baseline": fts5_baseline(docs, 10),
        "word_count_baseline": word_count_baseline(docs, 10),
    }
    out: dict = {"queries": len(queries), "split": split or "all", **built}
    for name, ranker in rankers.items():
        ranked, ms = timed(ranker, queries)
        rows = list(zip(ranked, queries, strict=True))
        section: dict = {
            "recall@10": mean([recall_at(r, q["relevant"], 10) for r, q in rows]),
            "mrr": mean([reciprocal_rank(r, q["relevant"]) for r, q in rows]),
            "ms_per_query": ms,
        }
        for kind in ("direct", "paraphrase", "question", "dev", "test"):
            part = [(r, q) for r, q in rows if kind in (q["type"], q["split"])]
            if not part:
                continue
            section[kind] = {
                "recall@10": mean([recall_at(r, q["relevant"], 10) for r, q in part]),
                "mrr": mean([reciprocal_rank(r, q["relevant"]) for r, q in part]),
            }
        if name.startswith("memdex"):
            section["misses"] = [
                {"id": q["id"], "query": q["query"], "want": q["relevant"][0], "got": r[:3]}
                for r, q in rows
                if not set(q["relevant"]) & set(r)
            ]
        out[name] = section
    return out


def set_weights(spec: str) -> dict[str, float]:
    "Set ranking constants for this run (an experiment; the defaults stay in ranking.py)."
    from memdex.query import ranking

    chosen = {}
    for part in spec.split(","):
        name, _, value = part.partition("=")
        name = name.strip()
        if not hasattr(ranking, name) or not name.isupper():
            raise click.BadParameter(
                f"{name!r} is not a weight in memdex/query/ranking.py", param_hint="--fusion"
            )
        current = getattr(ranking, name)
        chosen[name] = (
            value.strip()
            if isinstance(current, str)
            else value.strip() in ("1", "true")
            if isinstance(current, bool)
            else type(current)(float(value))
        )
        setattr(ranking, name, chosen[name])
    return chosen


@click.command()
@click.option(
    "--set",
    "which",
    type=click.Choice(["all", "scifact", "serena", "chats", "locomo", "longmemeval"]),
    default="all",
    show_default=True,
)
@click.option("--split", type=click.Choice(["dev", "test"]), help="Queries of one split only (every set).")
@click.option(
    "--model",
    type=click.Path(file_okay=False, exists=True, path_type=Path),
    help="Embed with this model and measure search by meaning beside words alone.",
)
@click.option("--keep", is_flag=True, help="Reuse indexes (and vectors) already in --work.")
@click.option(
    "--word-pieces",
    type=int,
    help="Embed each chunk's first N word pieces (an experiment; the default is in meaning/embed.py).",
)
@click.option(
    "--fusion",
    help="Try other meaning weights, e.g. WORDS_WEIGHT=1,CONVERSATION_MEANING=0.5 (names from ranking.py).",
)
@click.option("--via-cli", is_flag=True, help="Search through `memdex search --batch` in a subprocess.")
@click.option("--misses", is_flag=True, help="List the Serena and chat queries memdex misses.")
@click.option(
    "--locomo-limit",
    type=int,
    default=10,
    show_default=True,
    help="Results per LoCoMo and LongMemEval question (the budget is 2,000 tokens either way).",
)
@click.option("--work", type=click.Path(file_okay=False, path_type=Path), help="Keep notes and indexes here.")
def main(
    which: str,
    split: str | None,
    model: Path | None,
    keep: bool,
    word_pieces: int | None,
    fusion: str | None,
    via_cli: bool,
    misses: bool,
    locomo_limit: int,
    work: Path | None,
) -> None:
    """Measure ranking quality (JSON on stdout).

    Example:

        python scripts/eval.py --set serena --split dev
    """
    bench.words_only()  # --model embeds, on purpose
    with tempfile.TemporaryDirectory() as tmp:
        folder = work or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        result: dict = {"memdex": memdex.__version__}
        if fusion:
            result["fusion"] = set_weights(fusion)
        if word_pieces:
            from memdex.query.meaning import embed

            embed.PASSAGE_WORD_PIECES = result["word_pieces"] = word_pieces
        if which in ("all", "scifact"):
            result["scifact_train"] = eval_scifact(folder, via_cli, 100, split, model, keep)
        if which in ("all", "serena"):
            result["serena"] = eval_serena(folder, split, via_cli, model, keep)
        if which in ("all", "chats"):
            result["chats"] = eval_chats(folder, split, model, keep)
        if which in ("all", "locomo"):
            result["locomo"] = eval_locomo(folder, split, model, keep, locomo_limit)
        if which in ("all", "longmemeval"):
            result["longmemeval"] = eval_longmemeval(folder, split, model, keep, locomo_limit)
        if not misses:
            for section in result.values():
                for ranker in section.values() if isinstance(section, dict) else []:
                    if isinstance(ranker, dict):
                        ranker.pop("misses", None)
        for index in _INDEXES.values():
            index.close()
        ENGINE.close()
        click.echo(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
