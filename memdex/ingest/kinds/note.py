"""note: any other markdown; frontmatter optional.

The title comes from the frontmatter, else the first heading, else the file name.
"""

from __future__ import annotations

from memdex.ingest.base import SourceFile, SourceKind
from memdex.ingest.markdown import read_markdown
from memdex.models import ParsedFile


class NoteKind(SourceKind):
    name = "note"
    description = "any markdown file (*.md, *.markdown), frontmatter optional"
    one_document_per_file = True

    def claims(self, rel_path: str) -> bool:
        return self.accepts(rel_path)

    def parse(self, source: SourceFile) -> ParsedFile:
        return ParsedFile(kind=self.name, documents=[read_markdown(source, self.name, key=source.rel_path)])
