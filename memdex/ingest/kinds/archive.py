"""archive: a condensed chat archive -- CSV indexes and the chunk files they point at.

A folder with ``chat_index[.latest].csv``, ``all_topics[.latest].csv`` and
``condensed_index[.latest].csv`` (the ``.latest`` file wins when both exist). The archive is
one unit: its index file stands for all of it (its stored size and mtime sum and max those of
every file in the folder), and it is read whole or not at all -- a missing required column
fails the whole archive, naming the file and the column, and the last good version stays.
A chunk file that is missing is reported as a skipped record; the rest is indexed.

COLUMNS lists the accepted names of each column (matched case-insensitively; unknown columns
of chat_index are kept as metadata); docs/indexing.md documents them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memdex.errors import IngestError
from memdex.ingest.base import MB, SourceFile, SourceKind
from memdex.ingest.chat import Message, signals
from memdex.models import Chunk, Document, ParsedFile
from memdex.utils import as_date

COLUMNS = {
    "chat_index": {
        "chat_id": ("chat_id", "id", "conversation_id", "uuid", "chat"),
        "title": ("title", "name", "chat_title", "subject"),
        "platform": ("platform", "source", "provider", "service"),
        "date": ("date", "created", "created_at", "create_time", "started", "timestamp"),
        "message_count": ("message_count", "messages", "num_messages", "n_messages", "msg_count"),
        "chunk_count": ("chunk_count", "chunks", "num_chunks", "n_chunks"),
        "has_decisions": ("has_decisions", "decisions"),
        "has_discoveries": ("has_discoveries", "discoveries"),
        "has_procedures": ("has_procedures", "procedures"),
        "has_artifacts": ("has_artifacts", "artifacts"),
    },
    "all_topics": {
        "topic": ("topic", "keyword", "tag", "term"),
        "chat_id": ("chat_id", "id", "conversation_id", "uuid", "chat"),
    },
    "condensed_index": {
        "chat_id": ("chat_id", "id", "conversation_id", "uuid", "chat"),
        "chunk_index": ("chunk_index", "chunk", "index", "seq", "chunk_id", "part"),
        "path": ("path", "file", "chunk_file", "filename", "chunk_path", "file_path"),
        "size": ("size", "bytes", "size_bytes", "chars"),
    },
}
REQUIRED = {
    "chat_index": ("chat_id", "title"),
    "all_topics": ("topic", "chat_id"),
    "condensed_index": ("chat_id", "path"),
}
TRUE = {"1", "true", "yes", "y", "t", "x"}


def find_table(folder: Path, table: str) -> Path | None:
    "``<table>.latest.csv`` if there is one, else ``<table>.csv``."
    for name in (f"{table}.latest.csv", f"{table}.csv"):
        if (folder / name).is_file():
            return folder / name
    return None


class ArchiveKind(SourceKind):
    name = "archive"
    description = "condensed chat archive: chat_index.csv, all_topics.csv, condensed_index.csv + chunk files"
    max_bytes = 512 * MB
    aggregate = True
    suffixes = (".csv",)

    def claims_root(self, root: Path) -> bool:
        return root.is_dir() and find_table(root, "chat_index") is not None

    def manifest(self, zone: Path) -> Path | None:
        return find_table(zone, "chat_index")

    def parse(self, source: SourceFile) -> ParsedFile:
        zone = source.root
        chats = _table(source.path, source.data, "chat_index")
        parsed = ParsedFile(kind=self.name)
        topics: dict[str, list[str]] = {}
        topics_path = find_table(zone, "all_topics")
        if topics_path is not None:
            for row in _table(topics_path, _read(topics_path), "all_topics"):
                if row["topic"]:
                    topics.setdefault(row["chat_id"], []).append(row["topic"])
        pieces: dict[str, list[tuple[int, str, Path]]] = {}
        condensed_path = find_table(zone, "condensed_index")
        if condensed_path is not None:
            for number, row in enumerate(_table(condensed_path, _read(condensed_path), "condensed_index")):
                target = (zone / row["path"]).resolve()
                if not target.is_relative_to(zone.resolve()):
                    parsed.skipped.append(
                        (f"{row['chat_id']}/{row['path']}", "chunk file is outside the archive")
                    )
                    continue
                order = _int(row.get("chunk_index"), number)
                pieces.setdefault(row["chat_id"], []).append((order, row["path"], target))
        for row in chats:
            chat_id = row["chat_id"]
            if not chat_id:
                parsed.skipped.append((row["title"] or "?", "row has no chat_id"))
                continue
            chunks, missing = _chunks(row["title"] or chat_id, sorted(pieces.get(chat_id, [])))
            parsed.skipped += [(f"{chat_id}/{m}", "chunk file is missing or unreadable") for m in missing]
            if not chunks:
                parsed.skipped.append((chat_id, "no chunk file to index"))
                continue
            parsed.documents.append(_document(row, chunks, topics.get(chat_id, []), source))
        return parsed


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise IngestError(f"{path.name}: cannot read: {exc.strerror}") from None


def _table(path: Path, data: bytes, table: str) -> list[dict[str, Any]]:
    "Rows of one CSV with canonical column names; a missing required column fails the archive."
    import io

    from sqlite_utils.utils import Format, RowError, rows_from_file  # only archives need it

    try:
        rows, _ = rows_from_file(io.BytesIO(data), format=Format.CSV, encoding="utf-8-sig")
        raw = list(rows)
    except (RowError, UnicodeDecodeError, ValueError) as exc:
        raise IngestError(f"{path.name}: not a readable CSV file: {exc}") from None
    header = {str(k).strip().lower(): k for k in (raw[0].keys() if raw else _header(data))}
    mapping = {}
    for name, aliases in COLUMNS[table].items():
        found = next((header[a] for a in aliases if a in header), None)
        if found is None and name in REQUIRED[table]:
            raise IngestError(
                f"{path.name}: missing required column {name!r} (accepted names: {', '.join(aliases)}); "
                "nothing of this archive was indexed"
            )
        mapping[name] = found
    known = {v for v in mapping.values() if v is not None}
    out = []
    for row in raw:
        item: dict[str, Any] = {
            name: str(row.get(col) or "").strip() if col else "" for name, col in mapping.items()
        }
        item["extra"] = {str(k): v for k, v in row.items() if k not in known and v not in (None, "")}
        out.append(item)
    return out


def _header(data: bytes) -> list[str]:
    first = data.decode("utf-8-sig", errors="replace").splitlines()[:1]
    return [c.strip() for c in first[0].split(",")] if first else []


def _int(value: Any, default: int) -> int:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return default


def _chunks(title: str, pieces: list[tuple[int, str, Path]]) -> tuple[list[Chunk], list[str]]:
    chunks, missing = [], []
    for order, rel, path in pieces:
        try:
            text = path.read_text("utf-8-sig", errors="replace").strip()
        except OSError:
            missing.append(rel)
            continue
        if text:
            chunks.append(Chunk(heading=title, text=text, meta={"chunk_index": order, "file": rel}))
    return chunks, missing


def _document(row: dict[str, Any], chunks: list[Chunk], topics: list[str], source: SourceFile) -> Document:
    size = sum(len(c.text.encode("utf-8")) for c in chunks)
    flags = {
        f"has_{name}": row[f"has_{name}"].lower() in TRUE
        for name in ("decisions", "discoveries", "procedures", "artifacts")
    }
    if not any(row[f"has_{name}"] for name in ("decisions", "discoveries", "procedures", "artifacts")):
        flags = signals([Message("assistant", c.text) for c in chunks])
    date = as_date(row["date"])
    meta = {
        **row["extra"],
        **({"date_raw": row["date"]} if row["date"] and not date else {}),
        "message_count": _int(row["message_count"], 0) or None,
        "chunk_count": _int(row["chunk_count"], len(chunks)),
        "chunk_files": len(chunks),
        **flags,
    }
    title = row["title"] or row["chat_id"]
    return Document(
        key=row["chat_id"],
        kind="archive",
        title=title,
        chunks=chunks,
        size_bytes=size,
        topics=[(t, "archive") for t in topics] or [(title, "derived")],
        platform=row["platform"] or None,
        date=date,
        date_source="conversation" if date else None,
        created=date,
        scope=source.scope,
        meta=meta,
    )
