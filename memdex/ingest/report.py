"""What one index run did: counts, the files it could not index, and what it has to tell.

A problem is *known* when an earlier run found it and nothing changed since: the same file,
with the same stat, skipped for the same reason. Known problems stay in ``skipped`` (marked
``known``) so a report is complete, but they are not news: `memdex index` prints one line
for them and exits 0, and `memdex status` lists them. Only new problems fail a run.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field


@dataclass
class Skipped:
    "A file, or a record inside one (``path#record``), that could not be indexed, with why."

    path: str
    reason: str
    known: bool = False  # found by an earlier run, unchanged since (same stat, same reason)
    file: str = ""  # the file it is in: ``path`` itself unless it names a record

    def __post_init__(self) -> None:
        self.file = self.file or self.path


@dataclass
class IndexReport:
    "What one run did. ``skipped`` lists every file that could not be indexed, with why."

    roots: list[dict[str, object]] = field(default_factory=list)
    seen: int = 0
    unchanged: int = 0
    added: int = 0
    updated: int = 0
    removed: int = 0
    kept_deleted: int = 0  # files gone whose documents stay, marked deleted (ingest/departures.py)
    documents: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    missing_roots: list[str] = field(default_factory=list)  # remembered roots that are gone
    notes: list[str] = field(default_factory=list)  # what the user should know (a path was a symlink)
    seconds: float = 0.0
    stopped: bool = False  # interrupted by should_stop(); a later run finishes the work

    def to_dict(self) -> dict[str, object]:
        return asdict(self)

    @property
    def changed(self) -> int:
        return self.added + self.updated + self.removed + self.kept_deleted

    @property
    def new_problems(self) -> list[Skipped]:
        "Problems this run found: they fail `memdex index`."
        return [s for s in self.skipped if not s.known]

    @property
    def known_problems(self) -> list[Skipped]:
        return [s for s in self.skipped if s.known]

    def merge(self, other: IndexReport) -> None:
        "Add another run's counts to this one (several roots reported as one run)."
        self.roots += other.roots
        for name in ("seen", "unchanged", "added", "updated", "removed", "kept_deleted", "documents"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.skipped += other.skipped
        self.missing_roots += other.missing_roots
        self.notes += other.notes
        self.seconds = round(self.seconds + other.seconds, 3)
        self.stopped = self.stopped or other.stopped


def root_kind(forced: str | None, detected: str | None, holds: list[str]) -> str:
    """What a root is, in one word: the kind it was forced to or that claims it whole (a Serena
    folder), else the one kind of all its files, else ``mixed`` (``none``: nothing read yet)."""
    if forced or (detected and detected != "files"):
        return str(forced or detected)
    if len(holds) == 1:
        return holds[0]
    return "mixed" if holds else "none"
