"""note: any other markdown; frontmatter optional.

The title comes from the frontmatter, else the first heading, else the file name. A note is
its text: a frontmatter block that does not parse costs the note its fields, not its body --
it is indexed as text, block and all, and the broken block is reported as the record
``path#frontmatter`` with the line and YAML's reason. (A memory's fields are what it is: its
broken block stays an error, see ``memory``.)
"""

from __future__ import annotations

from memdex.ingest.base import SourceFile, SourceKind
from memdex.ingest.markdown import BrokenFrontmatter, read_markdown
from memdex.models import ParsedFile


class NoteKind(SourceKind):
    name = "note"
    description = "any markdown file (*.md, *.markdown), frontmatter optional"

    def claims(self, rel_path: str) -> bool:
        return self.accepts(rel_path)

    def parse(self, source: SourceFile) -> ParsedFile:
        try:
            doc = read_markdown(source, self.name, key=source.rel_path)
        except BrokenFrontmatter as exc:
            doc = read_markdown(source, self.name, key=source.rel_path, header=False)
            why = f"{exc}; the note is indexed as text, without its fields"
            return ParsedFile(kind=self.name, documents=[doc], skipped=[("frontmatter", why)])
        return ParsedFile(kind=self.name, documents=[doc])
