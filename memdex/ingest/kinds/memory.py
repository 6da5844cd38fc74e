"""memory: mnemonic / MIF ``*.memory.md`` files.

Fields come from the frontmatter, top-level or nested (``id``, ``title``, ``type``,
``namespace``, ``tags``, ``created``, ``modified``, ``provenance``, ``citations``...). The
namespace comes from the folder when the frontmatter has none.
"""

from __future__ import annotations

from memdex.ingest.base import SourceFile, SourceKind
from memdex.ingest.markdown import as_text, field_value, read_markdown, strip_suffix
from memdex.models import ParsedFile


class MemoryKind(SourceKind):
    name = "memory"
    description = "mnemonic / MIF *.memory.md files with YAML frontmatter"

    def claims(self, rel_path: str) -> bool:
        return rel_path.lower().endswith(".memory.md")

    def parse(self, source: SourceFile) -> ParsedFile:
        doc = read_markdown(source, self.name, key=strip_suffix(source.rel_path))
        doc.key = as_text(field_value(doc.meta, "id")) or doc.key
        return ParsedFile(kind=self.name, documents=[doc])
