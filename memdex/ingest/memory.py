"""memory: mnemonic / MIF ``*.memory.md`` files.

Fields come from the frontmatter, top-level or nested (``id``, ``title``, ``type``,
``namespace``, ``tags``, ``created``, ``modified``, ``provenance``, ``citations``...). The
namespace comes from the folder when the frontmatter has none.
"""

from __future__ import annotations

from pathlib import PurePosixPath

from ..models import ParsedFile
from .base import SourceFile, SourceKind
from .markdown import as_text, field_value, parse_markdown


class MemoryKind(SourceKind):
    name = "memory"
    description = "mnemonic / MIF *.memory.md files with YAML frontmatter"

    def claims(self, rel_path: str) -> bool:
        return rel_path.lower().endswith(".memory.md")

    def parse(self, source: SourceFile) -> ParsedFile:
        doc = parse_markdown(
            source.text(),
            source.rel_path,
            kind=self.name,
            size_bytes=source.size,
            key=_strip_suffix(source.rel_path),
            max_tokens=source.chunk_tokens,
        )
        doc.key = as_text(field_value(doc.meta, "id")) or doc.key
        if not doc.namespace:
            doc.namespace = folder_namespace(source.rel_path)
        doc.scope = as_text(field_value(doc.meta, "scope")) or source.scope
        return ParsedFile(kind=self.name, documents=[doc])


def folder_namespace(rel_path: str) -> str | None:
    "``decisions/project/x.memory.md`` -> ``decisions/project``; a file at the root has none."
    parent = str(PurePosixPath(rel_path).parent)
    return None if parent in (".", "") else parent


def _strip_suffix(rel_path: str) -> str:
    for suffix in (".memory.md", ".md", ".markdown"):
        if rel_path.lower().endswith(suffix):
            return rel_path[: -len(suffix)]
    return rel_path
