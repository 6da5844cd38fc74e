"""Markdown with optional YAML frontmatter -> Document: fields, title, dates, chunks at headings.

Shared by the memory, note and serena kinds, which differ only in how they name, label and
place what this module reads. Line numbers are 1-based and count the frontmatter, so a
chunk's ``line_start``/``line_end`` point into the file as it is on disk.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Any

import yaml
from frontmatter.default_handlers import YAMLHandler

from memdex.errors import IngestError
from memdex.ingest import frontmatter
from memdex.ingest.base import SourceFile
from memdex.ingest.frontmatter import as_text
from memdex.ingest.structure import Structure, lines_of, structure_of
from memdex.models import Chunk, Document
from memdex.utils import as_date

# Fields may sit at the top level or nested under one of these keys (both shapes are in
# use: see serena-memories/decision-frontmatter-migrations-must-cover-both-key-shapes.md).
NESTED_KEYS = ("metadata", "memory", "mif")
DEFAULT_CHUNK_TOKENS = 800

_YAML = YAMLHandler()


_BODY_DATE = re.compile(
    r"^\s*(?:[-*]\s*)?\**(?:date|created|updated|last updated|modified)\**\s*:\**\s*"
    r"(\d{4}-\d{2}-\d{2})",
    re.IGNORECASE,
)
_NAME_DATE = re.compile(r"(?<!\d)(\d{4}-\d{2}-\d{2})(?!\d)")


class BrokenFrontmatter(IngestError):
    "A file opens with a frontmatter block that does not parse: the message says where and why."


def split_frontmatter(text: str) -> tuple[dict[str, Any], str, int]:
    """Return (metadata, body, line number of the body's first line).

    Uses python-frontmatter's YAML handler to find the block, and libyaml to parse it (see
    ``frontmatter``); raises IngestError with the YAML problem when the block is broken, so
    the file is reported, not guessed at.
    """
    return _split_frontmatter(text, frontmatter.load)


def _split_frontmatter(text: str, load: Callable[[str], Any]) -> tuple[dict[str, Any], str, int]:
    if not _YAML.detect(text):
        return {}, text, 1
    try:
        fm, _ = _YAML.split(text)
    except ValueError:
        raise BrokenFrontmatter("frontmatter starts with --- but has no closing --- line") from None
    # The body starts after the closing delimiter: count lines up to it.
    match = None
    for match in _YAML.FM_BOUNDARY.finditer(text):
        if match.start() > 0:
            break
    assert match is not None
    body_start = match.end()
    if body_start < len(text) and text[body_start] == "\n":
        body_start += 1
    body_line = text.count("\n", 0, body_start) + 1
    try:
        meta = load(fm)
    except RecursionError:
        raise BrokenFrontmatter("broken YAML frontmatter: nested too deeply") from None
    except yaml.YAMLError as exc:
        # The context mark is where the broken construct starts ("[" of an unclosed list);
        # the problem mark is where YAML gave up, often the end of the block.
        mark = getattr(exc, "context_mark", None) or getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""  # the block starts on line 1
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise BrokenFrontmatter(f"broken YAML frontmatter{where}: {problem}") from None
    if not isinstance(meta, dict):
        # Not fields: a note that opens with a --- rule and prose. It is all body.
        return {}, text, 1
    return meta, text[body_start:], body_line


def field_value(meta: dict[str, Any], name: str) -> Any:
    "A frontmatter field, top-level first, then nested under metadata:/memory:/mif:."
    if meta.get(name) not in (None, ""):
        return meta[name]
    for key in NESTED_KEYS:
        nested = meta.get(key)
        if isinstance(nested, dict) and nested.get(name) not in (None, ""):
            return nested[name]
    return None


def scalar_text(value: Any) -> str | None:
    "A field meant to be one value (title, description): a list or mapping there is ignored."
    return None if isinstance(value, (list, dict)) else as_text(value)


def as_list(value: Any) -> list[str]:
    "Tags and keywords: a YAML list, or one string separated by commas."
    if value is None:
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    out: list[str] = []
    for item in items:
        text = as_text(item) if not isinstance(item, (dict, list)) else None
        if text and text not in out:
            out.append(text)
    return out


def first_heading(body: str, shape: Structure | None = None) -> str | None:
    "The first level-1 heading: a file that opens with ``## Problem`` has no title of its own."
    for heading in (shape or structure_of(body)).headings:
        if heading.level == 1:
            return clean_heading(heading.text)
    return None


# Only * emphasis and code marks: in agents' memory headings underscores are names (snake_case,
# __init__.py) far more often than emphasis.
_EMPHASIS = (
    re.compile(r"(\*\*)(?=\S)(.+?)(?<=\S)\*\*"),
    re.compile(r"(?<![\w*])(\*)(?=\S)(.+?)(?<=\S)\*(?![\w*])"),
    re.compile(r"`([^`]+)`"),
)


def clean_heading(text: str) -> str:
    "A heading as text: paired * emphasis and code marks go; snake_case, __init__ and C# stay."
    for pattern in _EMPHASIS:
        text = pattern.sub(lambda m: m.group(m.lastindex or 0), text)
    return text.strip()


def body_date(body: str) -> str | None:
    "A date written near the top of the text, like ``**Date**: 2025-12-29``."
    for line in lines_of(body)[:40]:
        match = _BODY_DATE.match(line)
        if match:
            return match.group(1)
    return None


def dated(frontmatter: str | None, body: str, rel_path: str) -> tuple[str | None, str | None]:
    "A document's date and where it came from: frontmatter, a date in the text, or the file name."
    if frontmatter:
        return frontmatter, "frontmatter"
    in_text = body_date(body)
    if in_text:
        return in_text, "text"
    named = name_date(rel_path)
    return (named, "file name") if named else (None, None)


def name_date(rel_path: str) -> str | None:
    match = _NAME_DATE.search(PurePosixPath(rel_path).name)
    return match.group(1) if match else None


def chunk_markdown(
    body: str,
    first_line: int,
    title: str,
    max_tokens: int = DEFAULT_CHUNK_TOKENS,
    shape: Structure | None = None,
) -> list[Chunk]:
    """Cut the body at headings (outside code fences) into chunks, never empty.

    A heading with no text of its own joins the next section. A section larger than
    ``max_tokens`` (bytes/4) is cut again at blank lines, then at lines; a single line longer
    than that is cut at spaces, so no chunk is ever much larger than the bound. ``shape`` is
    the body's structure, if the caller has it already.
    """
    shape = shape or structure_of(body)
    lines, line_no, continued = _bounded_lines(body, max_tokens * 4)
    # Headings by piece: a heading line cut at spaces is a heading in its first piece only.
    headings = {h.line: h for h in shape.headings}
    heading_at = [None if continued[i] else headings.get(n) for i, n in enumerate(line_no)]
    fenced = [n in shape.fenced for n in line_no]
    sections: list[tuple[list[str], int, int]] = []  # heading path, start, end (0-based, exclusive)
    stack: list[tuple[int, str]] = []
    start = 0
    path: list[str] = []
    for i, found in enumerate(heading_at):
        if found is None:
            continue
        if i > start:
            sections.append((path, start, i))
        while stack and stack[-1][0] >= found.level:
            stack.pop()
        stack.append((found.level, clean_heading(found.text)))
        path = [h for _, h in stack]
        start = i
    sections.append((path, start, len(lines)))

    chunks: list[Chunk] = []
    carry: int | None = None  # start of a heading-only section waiting for its content
    for path, s, e in sections:
        has_own_text = any(lines[i].strip() and heading_at[i] is None for i in range(s, e))
        if not has_own_text and e < len(lines):
            carry = s if carry is None else carry
            continue
        if carry is not None:
            s, carry = carry, None
        heading = _heading_path(title, path)
        for piece_start, piece_end in _split_large(lines, fenced, s, e, max_tokens):
            text = "\n".join(lines[piece_start:piece_end]).strip()
            if not text:
                continue
            last = piece_end - 1
            while last > piece_start and not lines[last].strip():
                last -= 1
            first = piece_start
            while first < last and not lines[first].strip():
                first += 1
            chunks.append(
                Chunk(
                    heading=heading,
                    text=text,
                    line_start=line_no[first] + first_line,
                    line_end=line_no[last] + first_line,
                )
            )
    return chunks


def _bounded_lines(body: str, limit: int) -> tuple[list[str], list[int], list[bool]]:
    "The body's lines, any line over ``limit`` bytes cut at spaces: (pieces, line index, continued)."
    pieces: list[str] = []
    numbers: list[int] = []
    continued: list[bool] = []
    for number, line in enumerate(lines_of(body)):
        if len(line) * 4 <= limit or len(line.encode("utf-8")) <= limit:
            pieces.append(line)
            numbers.append(number)
            continued.append(False)
            continue
        rest = line
        first = True
        while rest:
            cut = cut_point(rest, limit)
            pieces.append(rest[:cut])
            numbers.append(number)
            continued.append(not first)
            rest = rest[cut:].lstrip()
            first = False
    return pieces, numbers, continued


def cut_point(text: str, limit: int) -> int:
    "Where to cut ``text`` so the piece has at most ``limit`` bytes: the last space before it."
    end = min(len(text), limit)
    while end > 0 and len(text[:end].encode("utf-8")) > limit:
        end -= max(1, (len(text[:end].encode("utf-8")) - limit) // 4)
    if end >= len(text):
        return len(text)
    space = text.rfind(" ", 0, end)
    return space if space > end // 2 else max(end, 1)


def _heading_path(title: str, path: list[str]) -> str:
    parts = list(path)
    if title and (not parts or parts[0].casefold() != title.casefold()):
        parts.insert(0, title)
    return " > ".join(parts)


def _split_large(
    lines: list[str], fenced: list[bool], start: int, end: int, max_tokens: int
) -> list[tuple[int, int]]:
    "Split lines[start:end] into runs of at most max_tokens, preferring blank lines outside fences."
    limit = max_tokens * 4
    size = sum(len(ln.encode("utf-8")) + 1 for ln in lines[start:end])
    if size <= limit:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    piece_start = start
    piece_size = 0
    last_break: int | None = None
    for i in range(start, end):
        line = lines[i]
        line_size = len(line.encode("utf-8")) + 1
        if piece_size + line_size > limit and i > piece_start:
            cut = last_break if last_break is not None and last_break > piece_start else i
            pieces.append((piece_start, cut))
            piece_start = cut
            piece_size = sum(len(ln.encode("utf-8")) + 1 for ln in lines[cut:i])
            last_break = None
        piece_size += line_size
        if not line.strip() and not fenced[i]:
            last_break = i + 1
    pieces.append((piece_start, end))
    return pieces


def parse_markdown(
    text: str,
    rel_path: str,
    *,
    kind: str,
    size_bytes: int,
    key: str,
    max_tokens: int = DEFAULT_CHUNK_TOKENS,
    header: bool = True,
) -> Document:
    """Read fields, title, dates and chunks of one markdown file. ``header=False`` reads a
    frontmatter block as text like the rest (for a note whose block does not parse)."""
    # The fields as JSON values, bounded against hostile YAML before anything walks them.
    meta, body, body_line = _split_frontmatter(text, frontmatter.fields) if header else ({}, text, 1)
    shape = structure_of(body)  # parsed once, for the title and the chunks
    title = (
        scalar_text(field_value(meta, "title"))
        or first_heading(body, shape)
        or scalar_text(field_value(meta, "name"))
        or PurePosixPath(strip_suffix(rel_path)).name
    )
    created = as_date(field_value(meta, "created"))
    modified = as_date(field_value(meta, "modified")) or as_date(field_value(meta, "updated"))
    description = scalar_text(field_value(meta, "description")) or scalar_text(field_value(meta, "summary"))
    tags = as_list(field_value(meta, "tags"))
    topics = [(t, "tag") for t in tags]
    topics += [(a, "alias") for a in as_list(field_value(meta, "aliases"))]
    topics += [(k, "keyword") for k in as_list(field_value(meta, "keywords"))]
    topics += [(k, "keyword") for k in as_list(field_value(meta, "topics"))]
    chunks = chunk_markdown(body, body_line, title, max_tokens, shape)
    # `date:` is how most static-site and notes tools date a page (Hugo, Jekyll, Obsidian)
    stated = modified or created or as_date(field_value(meta, "date"))
    date, date_source = dated(stated, body, rel_path)
    if not chunks:
        # Frontmatter only: the fields themselves are the content, so the document is findable.
        summary = "\n".join(x for x in [title, description or "", " ".join(tags)] if x)
        chunks = [Chunk(heading=title, text=summary, line_start=1, line_end=max(body_line - 1, 1))]
    return Document(
        key=key,
        kind=kind,
        title=title,
        chunks=chunks,
        size_bytes=size_bytes,
        description=description or "",
        tags=tags,
        topics=topics,
        namespace=as_text(field_value(meta, "namespace")),
        type=as_text(field_value(meta, "type")),
        date=date,
        date_source=date_source,
        created=created,
        modified=modified,
        line_count=text.count("\n") + (0 if text.endswith("\n") else 1),
        meta=meta,
    )


def read_markdown(source: SourceFile, kind: str, key: str, *, header: bool = True) -> Document:
    "One markdown source file as a document of ``kind``; namespace from its folder if unset."
    doc = parse_markdown(
        source.text(),
        source.rel_path,
        kind=kind,
        size_bytes=source.size,
        key=key,
        max_tokens=source.chunk_tokens or DEFAULT_CHUNK_TOKENS,
        header=header,
    )
    doc.namespace = doc.namespace or folder_namespace(source.rel_path)
    doc.scope = as_text(field_value(doc.meta, "scope")) or source.scope
    return doc


def folder_namespace(rel_path: str) -> str | None:
    "``decisions/project/x.memory.md`` -> ``decisions/project``; a file at the root has none."
    parent = str(PurePosixPath(rel_path).parent)
    return None if parent in (".", "") else parent


def strip_suffix(rel_path: str) -> str:
    "The path without its markdown ending: a Serena memory's name, a memory's fallback id."
    for suffix in (".memory.md", ".md", ".markdown"):
        if rel_path.lower().endswith(suffix):
            return rel_path[: -len(suffix)]
    return rel_path
