"""note: any other markdown; frontmatter optional.

The title comes from the frontmatter, else the first heading, else the file name.
"""

from __future__ import annotations

from ..models import ParsedFile
from .base import SourceFile, SourceKind
from .markdown import parse_markdown
from .memory import folder_namespace


class NoteKind(SourceKind):
    name = "note"
    description = "any markdown file (*.md, *.markdown), frontmatter optional"

    def claims(self, rel_path: str) -> bool:
        return self.accepts(rel_path)

    def parse(self, source: SourceFile) -> ParsedFile:
        doc = parse_markdown(
            source.text(),
            source.rel_path,
            kind=self.name,
            size_bytes=source.size,
            key=source.rel_path,
            max_tokens=source.chunk_tokens,
        )
        doc.namespace = doc.namespace or folder_namespace(source.rel_path)
        doc.scope = source.scope
        return ParsedFile(kind=self.name, documents=[doc])
