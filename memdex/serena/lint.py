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
  ``few-keywords``       a skill row with under 10 keywords (``--min-keywords``)
  ``many-keywords``      a skill row with over 15 keywords (``--max-keywords``)
  ``domain-naming``      a skill row pointing at a file not named ``{domain}-{description}``
                         after its index (``skills-git-index.md``: ``git-...``)
  ``atomic-format``      a memory with a title line, a date/status line or a parent pointer
  ``escaped-pipe``       a cell with ``\\|``, which other tools split
  ``row-outside-table``  a row after a blank line: read, but shown as text
  ``orphan``             a memory no index row points at (search still finds it)
  ``empty-file``         a memory file with nothing in it

A skill row is a row of a domain index that points at memories; routing rows (every row of
memory-index.md, and rows that point at other indexes) have no keyword count or naming rule.
The three ADR-017 format rules are warnings because the real corpora it was written for break
them by the hundred (see docs/measured.md); ``--strict`` makes warnings blocking too, and
``--ignore CODE`` leaves a rule out. Nothing is written to the folder.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from memdex.errors import IngestError, InvalidParameter
from memdex.ingest.kinds.serena import is_index_name
from memdex.ingest.markdown import split_frontmatter
from memdex.ingest.serena_index import Row
from memdex.ingest.structure import lines_of, structure_of
from memdex.serena.tiers import TOP_INDEX, Folder, Index, scan

MIN_UNIQUE = 0.4
MIN_KEYWORDS, MAX_KEYWORDS = 10, 15  # ADR-017: "10-15 keywords per skill"
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
WARNINGS = {
    "few-keywords",
    "many-keywords",
    "domain-naming",
    "atomic-format",
    "escaped-pipe",
    "row-outside-table",
    "orphan",
    "empty-file",
}
CODES = (ERRORS - {"malformed-row"}) | WARNINGS  # malformed rows are reported as malformed-table


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


def lint(
    root: Path,
    min_unique: float = MIN_UNIQUE,
    min_keywords: int = MIN_KEYWORDS,
    max_keywords: int = MAX_KEYWORDS,
    ignore: frozenset[str] | set[str] = frozenset(),
) -> Report:
    "Every finding for the Serena folder at ``root``, in file and line order."
    if min_keywords > max_keywords:
        raise InvalidParameter(
            f"--min-keywords {min_keywords} is above --max-keywords {max_keywords}: "
            "give a minimum no larger than the maximum (ADR-017 asks for 10 to 15)."
        )
    unknown = sorted(set(ignore) - CODES)
    if unknown:
        raise InvalidParameter(
            f"--ignore {unknown[0]}: no such rule; the rules are {', '.join(sorted(CODES))}."
        )
    folder = scan(root)
    findings: list[Finding] = []

    def add(code: str, file: str, line: int | None, message: str) -> None:
        if code not in ignore:
            findings.append(Finding("error" if code in ERRORS else "warning", code, file, line, message))

    if TOP_INDEX not in folder.indexes:
        add("no-top-index", TOP_INDEX, None, "the folder has no memory-index.md to route from")
    for index in folder.indexes.values():
        _check_index(index, folder, add, min_unique, (min_keywords, max_keywords))
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
        text = folder.text(rel) if size else ""
        if not text.strip():
            add("empty-file", rel, None, "the memory file is empty")
            continue
        for line, what, shown, more in [] if "atomic-format" in ignore else atomic_problems(text):
            also = f" (and {more} more)" if more else ""
            add("atomic-format", rel, line, f"{what} {shown!r}{also}: {_WHY[what]}")
    findings.sort(key=lambda f: (f.file, f.line or 0, f.code))
    rows = sum(len(i.rows()) for i in folder.indexes.values())
    return Report(
        folder.root, findings, len(folder.indexes), len(folder.memories), rows, len(folder.orphans())
    )


def _check_index(
    index: Index, folder: Folder, add: Any, min_unique: float, keyword_bounds: tuple[int, int]
) -> None:
    for problem in index.parsed.problems:
        code = "malformed-table" if problem.code == "malformed-row" else problem.code
        add(code, index.rel, problem.line, problem.message)
    if not index.rows():
        add("empty-index", index.rel, None, "no keyword rows could be read from this index")
    if not index.is_top:
        for line, kind, text in index.parsed.other:
            message = f"{kind} in a domain index, which must be a pure table: {_shown(text)!r}"
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
    skill_rows = [] if index.is_top else [r for r in rows if not is_routing(r)]
    low, high = keyword_bounds
    for row in skill_rows:
        count = len(row.keywords)
        if 0 < count < low or count > high:
            code = "few-keywords" if count < low else "many-keywords"
            add(code, index.rel, row.line, f"{count} keywords; a skill row needs {low} to {high} (ADR-017)")
    _check_names(index, skill_rows, add)
    if index.is_top or len(rows) < 2:
        return
    for line, share in uniqueness(rows).items():
        if share < min_unique:
            message = f"{share:.0%} of the row's keywords are unique in its index; {min_unique:.0%} must be"
            add("low-uniqueness", index.rel, line, message)


def is_routing(row: Row) -> bool:
    "A row that points only at other indexes routes; a row that points at a memory is a skill row."
    return bool(row.targets) and all(is_index_name(_file_name(written)) for _, written, _ in row.targets)


def _file_name(written: str) -> str:
    name = written.split("#", 1)[0]
    return name if name.lower().endswith((".md", ".markdown")) else name + ".md"


def domain_of(index_rel: str) -> str:
    "The domain an index is named after: ``skills-git-index.md`` and ``git-index.md`` -> ``git``."
    name = Path(index_rel).name.lower().removesuffix(".md").removesuffix("-index")
    return name.removeprefix("skills-") or name


def _check_names(index: Index, skill_rows: list[Row], add: Any) -> None:
    """ADR-017: index entries reference files named ``{domain}-{description}``. A domain of
    several words also takes its leading words (``ci-infrastructure``: ``ci-...``)."""
    domain = domain_of(index.rel)
    words = domain.split("-")
    prefixes = tuple("-".join(words[: i + 1]) + "-" for i in range(len(words)))
    lines = {row.line for row in skill_rows}
    for link in index.links:
        if link.line not in lines or not link.target or is_index_name(link.target):
            continue
        stem = Path(link.target).stem.casefold()
        if stem.startswith("skill-"):
            continue  # deprecated-prefix says it already
        if not any(stem.startswith(p) and len(stem) > len(p) for p in prefixes):
            expected = " or ".join(f"{p}..." for p in reversed(prefixes))
            message = f"the row points at {link.target}: a {domain} memory is named {expected}"
            add("domain-naming", index.rel, link.line, message + " ({domain}-{description})")


# -- the atomic-file format (ADR-017: "No title, no parent pointers, no dates") --------------------------
_WHY = {
    "a title line": "the file name is its title, and an atomic file has none",
    "a date/status line": "dates and status are not actionable and cost tokens on every read",
    "a parent pointer": "the index already routes here; an atomic file points at no parent",
}
_TITLE = re.compile(r"^ {0,3}#[ \t]+\S")
_BOLD = r"(?:\*\*|__|\*|_)?"
_DATE_STATUS = re.compile(
    rf"^\s*(?:>\s*)?(?:[-*+]\s+)?{_BOLD}"
    r"(?:date|dated|created|updated|last[ -]updated|modified|last[ -]modified|status|analy[sz]ed)"
    rf"\s*(?::{_BOLD}|{_BOLD}\s*:)\s*\S",
    re.IGNORECASE,
)
_PARENT = re.compile(
    rf"^\s*(?:>\s*)?(?:[-*+]\s+)?{_BOLD}(?:parent|parent index|up|back to|breadcrumbs?){_BOLD}\s*:",
    re.IGNORECASE,
)
_LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]+)\)")
_BACK_WORDS = re.compile(r"^(?:[\s>*_\-|:·,←↑«»]|back|to|up|parent|index|home|see)*$", re.IGNORECASE)


def atomic_problems(text: str) -> list[tuple[int, str, str, int]]:
    """Where a memory breaks ADR-017's atomic-file format: (line, what, the line, how many
    more of the kind), one per kind -- a title line (a ``#`` heading as the first line of the
    body), a date/status line (``**Date**: ... | **Status**: ...``, ``Created:``, ``Last
    updated:``), a parent pointer (``Parent: [...]``, or a line that only links back to an
    index). Frontmatter is metadata, not lines of the body, and is not read here; neither is
    fenced code."""
    try:
        _, body, first = split_frontmatter(text)
    except IngestError:
        body, first = text, 1
    lines = lines_of(body)
    found: dict[str, list[tuple[int, str]]] = {}
    content = [(i, line) for i, line in enumerate(lines) if line.strip()]
    # The first line of the body cannot be inside a fence (it would open it) or indented code.
    if content and _TITLE.match(content[0][1]):
        found["a title line"] = [(content[0][0], content[0][1])]
    candidates = [
        (i, line, "a date/status line" if _DATE_STATUS.match(line) else "a parent pointer")
        for i, line in content
        if _DATE_STATUS.match(line) or _PARENT.match(line) or _links_back(line)
    ]
    # A fence opens on a line with ``` or ~~~: candidates above the first such line are not
    # fenced, so the markdown is parsed only when a fence could hide one.
    first_fence = next((i for i, line in content if "```" in line or "~~~" in line), len(lines))
    if candidates:
        late = any(i > first_fence for i, _, _ in candidates)
        fenced = structure_of(body).fenced if late else frozenset()
        for i, line, what in candidates:
            if i not in fenced:
                found.setdefault(what, []).append((i, line))
    return [
        (hits[0][0] + first, what, _shown(hits[0][1].strip()), len(hits) - 1)
        for what, hits in sorted(found.items(), key=lambda kv: kv[1][0][0])
    ]


def _links_back(line: str) -> bool:
    "A line of links to index files and nothing else but 'back to', arrows and the like."
    links = _LINK.findall(line)
    if not links or not all(is_index_name(_file_name(target.rsplit("/", 1)[-1])) for _, target in links):
        return False
    return bool(_BACK_WORDS.match(_LINK.sub(" ", line)))


def _shown(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def uniqueness(rows: list[Any]) -> dict[int, float]:
    "For each row (by line), the share of its keywords that no other row of the index uses."
    sets = {r.line: {k.casefold() for k in r.keywords} for r in rows}
    out = {}
    for line, mine in sets.items():
        others: set[str] = set().union(*(s for other, s in sets.items() if other != line))
        out[line] = sum(1 for k in mine if k not in others) / len(mine) if mine else 0.0
    return out
