"""Secrets masked in text the index already holds: once after an upgrade, and for a root that
stops keeping its secrets.

Ingest masks what it writes (``memdex.secrets``, ``ingest.writer``). An index written before
memdex masked secrets, or with other rules (``secrets.IDENTITY`` differs from the one the
``secret_rules`` table records), still holds them: ``store.db.migrate`` calls
:func:`mask_stored` once, in the migration's transaction, saying so on stderr. It masks each
stored document in place exactly as ingest would have masked it (ingest masks parsed text,
not a file's bytes), so no file need be read again and a file deleted and kept is cleaned
too. Full-text entries follow through the tables' update triggers (and, for a document's
whole text, bodies_fts by hand: it has no trigger on chunks); vectors made from a masked
chunk are dropped, for `memdex embed` to make again.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from collections.abc import Callable
from typing import Any

from memdex import secrets

# store.db.query, handed in: store.db calls this module while it migrates, so this module
# does not import it back.
Query = Callable[[str], str]


def mask_stored(
    conn: sqlite3.Connection, query: Query, root_id: int | None = None
) -> tuple[Counter[str], int]:
    """Mask the stored text of every document of the roots that do not keep secrets (or of
    one root); returns what was masked by kind, and in how many documents. Runs inside the
    caller's transaction."""
    total: Counter[str] = Counter()
    documents = 0
    rows = conn.execute(query("documents_to_mask"), {"root_id": root_id}).fetchall()
    for doc in rows:
        kinds = _mask_document(conn, query, doc)
        if kinds:
            documents += 1
            total.update(kinds)
            conn.executemany(
                query("secrets_masked_add"),
                [{"document_id": doc["id"], "kind": k, "count": n} for k, n in kinds.items()],
            )
    return total, documents


def _mask_document(conn: sqlite3.Connection, query: Query, doc: sqlite3.Row) -> Counter[str]:
    kinds: Counter[str] = Counter()
    fields: dict[str, Any] = {}
    chunks = conn.execute(query("chunks_to_mask"), {"document_id": doc["id"]}).fetchall()
    texts = [doc["title"] or "", doc["description"] or "", doc["meta"] or ""]
    clean = secrets.not_secret("\n\n".join(texts + [f"{c['heading']}\n{c['text']}" for c in chunks]))
    topics = json.loads(doc["topics"] or "[]")
    dropped = [t for t in topics if isinstance(t, str) and not clean(t)]  # words of a secret
    for name in ("title", "description"):
        fields[name] = secrets.mask_value(doc[name], kinds)
    for name in ("tags", "topics", "meta"):
        value = json.loads(doc[name] or "null")
        if name == "topics" and dropped:
            value = [t for t in value if t not in dropped]
        fields[name] = json.dumps(secrets.mask_value(value, kinds), ensure_ascii=False)
    if kinds or dropped:
        conn.execute(query("document_mask_update"), {"id": doc["id"], **fields})
        for topic in topics:
            if topic in dropped:
                conn.execute(query("topic_delete"), {"document_id": doc["id"], "topic": topic})
                continue
            masked = secrets.mask(topic).text
            if masked != topic:
                conn.execute(
                    query("topic_mask_update"), {"document_id": doc["id"], "topic": topic, "masked": masked}
                )
    changed = []
    for chunk in chunks:
        meta = json.loads(chunk["meta"] or "{}")
        found: Counter[str] = Counter()
        heading, text = secrets.mask_chunk(chunk["heading"], chunk["text"], meta, found)
        if found:
            kinds.update(found)
            size = len(text.encode("utf-8"))  # est_tokens as memdex.models makes it (bytes / 4)
            changed.append(
                {
                    "id": chunk["id"],
                    "heading": heading,
                    "text": text,
                    "meta": json.dumps(meta),
                    "size_bytes": size,
                    "est_tokens": (size + 3) // 4,
                }
            )
    if changed:
        whole = bool(doc["whole_text"])
        if whole:  # its whole text leaves bodies_fts with the tokens it went in with
            conn.execute(query("body_fts_delete"), {"document_id": doc["id"]})
        conn.executemany(query("chunk_mask_update"), changed)
        conn.executemany(query("chunk_vectors_delete"), [{"id": c["id"]} for c in changed])
        if whole:
            conn.execute(query("body_fts_insert"), {"document_id": doc["id"]})
    return kinds


def mask_index(conn: sqlite3.Connection, query: Query) -> None:
    """Mask what the index holds with this memdex's rules, once, and record them: after the
    migration that brought masking, and whenever the rules change. Says so on stderr when it
    masked anything (it reads every stored text: about as long as tokenizing it)."""
    import sys
    import time

    started = time.perf_counter()
    masked, documents = mask_stored(conn, query)
    conn.execute(query("secret_rules_set"), {"identity": secrets.IDENTITY})
    if masked:
        where = conn.execute("PRAGMA database_list").fetchone()[2]
        by_kind = ", ".join(f"{k} {n}" for k, n in masked.most_common())
        sys.stderr.write(
            f"memdex: masked {sum(masked.values()):,} secret{'' if sum(masked.values()) == 1 else 's'} "
            f"already in {where} ({by_kind}) in {documents:,} document{'' if documents == 1 else 's'}, "
            f"with {secrets.IDENTITY} (once; {time.perf_counter() - started:.1f} s)\n"
        )
