"""``memdex lint``: is a Serena tiered memory folder still true to its design?

The rules (after the design that introduced the tiers, its ADR-017), each finding with a
severity, a file and a line:

error (blocking)
  ``missing-target``     a row points at a file that does not exist
  ``duplicate-row``      an index lists the same file twice
  ``low-uniqueness``     under 40% (``--min-unique``) of a row's keywords appear in no other
                         row of its domain index
  ``not-lookup-table``   a domain index holds a title, heading, metadata, navigation or prose
  ``malformed-table``    a table with no keywords and file columns, or a row with the wrong
                         number of cells: its rows cannot be read
  ``empty-index``        an index file with no readable rows
  ``no-top-index``       the folder has no memory-index.md
  ``unreached-index``    memory-index.md does not reach a domain index
  ``deprecated-prefix``  a ``skill-`` file, listed in an index or not
warning
  ``few-keywords``       a row with under 5 keywords (``--min-keywords``)
  ``escaped-pipe``       a cell with ``\\|``, which other tools split
  ``row-outside-table``  a row after a blank line: read, but shown as text
  ``orphan``             a memory no index row points at (search still finds it)
  ``empty-file``         a memory file with nothing in it

``--strict`` makes warnings blocking too. Nothing is written to the folder.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memdex.serena.tiers import TOP_INDEX, Folder, Index, scan

MIN_UNIQUE = 0.4
MIN_KEYWORDS = 5
ERRORS = {
    "missing-target",
    "duplicate-row",
    "low-uniqueness",
    "not-lookup-table",
    "malformed-table",
    "malformed-row",
    "empty-index",
    "no-top-index",
    "unreached-index",
    "deprecated-prefix",
}


@dataclass
class Finding:
    severity: str  # error | warning
    code: str
    file: str  # relative to the folder
    line: int | None
    message: str

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line else self.file
        return f"{where}: {self.severity}: {self.message} [{self.code}]"


@dataclass
class Report:
    root: Path
    findings: list[Finding]
    indexes: int
    memories: int
    rows: int
    orphans: int

    def blocking(self, strict: bool = False) -> list[Finding]:
        return [f for f in self.findings if f.severity == "error" or strict]

    def to_dict(self, strict: bool = False) -> dict[str, Any]:
        counts = Counter(f.code for f in self.findings)
        return {
            "root": str(self.root),
            "indexes": self.indexes,
            "memories": self.memories,
            "rows": self.rows,
            "orphans": self.orphans,
            "errors": sum(1 for f in self.findings if f.severity == "error"),
            "warnings": sum(1 for f in self.findings if f.severity == "warning"),
            "blocking": len(self.blocking(strict)),
            "by_code": dict(sorted(counts.items())),
            "findings": [asdict(f) for f in self.findings],
        }


def lint(root: Path, min_unique: float = MIN_UNIQUE, min_keywords: int = MIN_KEYWORDS) -> Report:
    "Every finding for the Serena folder at ``root``, in file and line order."
    folder = scan(root)
    findings: list[Finding] = []

    def add(code: str, file: str, line: int | None, message: str) -> None:
        findings.append(Finding("error" if code in ERRORS else "warning", code, file, line, message))

    if TOP_INDEX not in folder.indexes:
        add("no-top-index", TOP_INDEX, None, "the folder has no memory-index.md to route from")
    for index in folder.indexes.values():
        _check_index(index, folder, add, min_unique, min_keywords)
    reachable = folder.reachable()
    if TOP_INDEX in folder.indexes:
        for rel in sorted(folder.indexes):
            if rel != TOP_INDEX and rel not in reachable:
                add("unreached-index", rel, None, f"no path from {TOP_INDEX} leads to this index")
    for rel in folder.orphans():
        add("orphan", rel, None, "no index row points at this memory")
    for rel, size in sorted(folder.memories.items()):
        name = Path(rel).name
        if name.startswith("skill-"):
            listed = "listed in an index" if folder.links_to(rel) else "in no index"
            add(
                "deprecated-prefix",
                rel,
                None,
                f"the skill- prefix is deprecated ({listed}): name it {{domain}}-...",
            )
        if size == 0 or not folder.text(rel).strip():
            add("empty-file", rel, None, "the memory file is empty")
    findings.sort(key=lambda f: (f.file, f.line or 0, f.code))
    rows = sum(len(i.rows()) for i in folder.indexes.values())
    return Report(
        folder.root, findings, len(folder.indexes), len(folder.memories), rows, len(folder.orphans())
    )


def _check_index(index: Index, folder: Folder, add: Any, min_unique: float, min_keywords: int) -> None:
    for problem in index.parsed.problems:
        code = "malformed-table" if problem.code == "malformed-row" else problem.code
        add(code, index.rel, problem.line, problem.message)
    if not index.rows():
        add("empty-index", index.rel, None, "no keyword rows could be read from this index")
    if not index.is_top:
        for line, kind, text in index.parsed.other:
            shown = text if len(text) <= 60 else text[:57] + "..."
            message = f"{kind} in a domain index, which must be a pure table: {shown!r}"
            add("not-lookup-table", index.rel, line, message)
    # A domain index lists each memory once; the top index may route several rows to one
    # domain index, but not the same keywords twice.
    seen: dict[object, int] = {}
    for link in index.links:
        key = (link.target, frozenset(k.casefold() for k in link.keywords)) if index.is_top else link.target
        if link.target is None or not link.exists:
            add("missing-target", index.rel, link.line, f"{link.written} does not exist in the folder")
        elif key in seen and seen[key] != link.line:
            add("duplicate-row", index.rel, link.line, f"{link.target} is already listed on line {seen[key]}")
        if link.target and Path(link.target).name.startswith("skill-"):
            add(
                "deprecated-prefix",
                index.rel,
                link.line,
                f"the row points at {link.target}: skill- is deprecated",
            )
        if link.target:
            seen.setdefault(key, link.line)
    rows = index.rows()
    for row in rows:
        if 0 < len(row.keywords) < min_keywords:
            message = f"{len(row.keywords)} keywords; a row needs {min_keywords} or more"
            add("few-keywords", index.rel, row.line, message)
    if index.is_top or len(rows) < 2:
        return
    for line, share in uniqueness(rows).items():
        if share < min_unique:
            message = f"{share:.0%} of the row's keywords are unique in its index; {min_unique:.0%} must be"
            add("low-uniqueness", index.rel, line, message)


def uniqueness(rows: list[Any]) -> dict[int, float]:
    "For each row (by line), the share of its keywords that no other row of the index uses."
    sets = {r.line: {k.casefold() for k in r.keywords} for r in rows}
    out = {}
    for line, mine in sets.items():
        others: set[str] = set().union(*(s for other, s in sets.items() if other != line))
        out[line] = sum(1 for k in mine if k not in others) / len(mine) if mine else 0.0
    return out
