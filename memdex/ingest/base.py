"""What every source kind implements, and the file it is handed."""

from __future__ import annotations

import codecs
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memdex.errors import IngestError
from memdex.models import Document, ParsedFile

MB = 1024 * 1024
SNIFF_BYTES = 65536  # what ``SourceKind.sniff`` is shown: a file's head


@dataclass
class SourceFile:
    "One file handed to a parser: its bytes are already read; parsers never touch the disk."

    path: Path  # absolute
    rel_path: str  # relative to the root, with forward slashes
    root: Path
    data: bytes
    scope: str | None = None
    chunk_tokens: int | None = None  # None: each kind's own default
    # A kind that opens its file itself: the state it saved when it last read this file
    # (``ParsedFile.tail``), so it reads only what changed since; None: read it all.
    state: dict[str, Any] | None = None

    @property
    def size(self) -> int:
        return len(self.data)

    def text(self) -> str:
        return decode_text(self.data)

    def json(self) -> Any:
        "The file as JSON; a file that is not is an IngestError saying where it breaks."
        try:
            return json.loads(self.text())
        except json.JSONDecodeError as exc:
            raise IngestError(f"not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
        except RecursionError:  # nested thousands deep: no export is built so
            raise IngestError("not a chat export: its JSON is nested too deeply to read") from None


def decode_text(data: bytes) -> str:
    "Bytes -> str for text sources: UTF-8 (a BOM is fine), or UTF-16 with a BOM."
    if not data.strip():
        raise IngestError("empty file")
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            raise IngestError(f"not valid UTF-16 at byte {exc.start}") from None
    if b"\x00" in data[:8192]:
        raise IngestError("binary file (it contains NUL bytes), not text")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise IngestError(
            f"not valid UTF-8 (byte {exc.start} is 0x{data[exc.start]:02x}); "
            "convert the file to UTF-8 to index it"
        ) from None


@dataclass(frozen=True)
class Resume:
    """How an agent goes back into one of its sessions: a command line, and the folder it is
    run in. ``{name}`` is filled from the document: ``key``, or a field of its meta;
    ``{a|b}`` takes the first that is set. A command naming a field the document lacks is no
    command; a folder it lacks is none (the command alone)."""

    argv: tuple[str, ...]
    cwd: str = "{project}"

    def command(self, key: str, meta: Mapping[str, Any]) -> dict[str, Any] | None:
        "``{argv, cwd, command}`` for one document; ``command`` is one shell line to paste."
        values = {"key": key, **{k: v for k, v in meta.items() if isinstance(v, str) and v}}
        argv = [_fill(part, values) for part in self.argv]
        if any(part is None for part in argv):
            return None
        words = [part for part in argv if part is not None]
        cwd = _fill(self.cwd, values) if self.cwd else None
        line = shlex.join(words)
        return {"argv": words, "cwd": cwd, "command": f"cd {shlex.quote(cwd)} && {line}" if cwd else line}


def _fill(template: str, values: Mapping[str, str]) -> str | None:
    missing = False

    def one(match: re.Match[str]) -> str:
        nonlocal missing
        for name in match.group(1).split("|"):
            if values.get(name):
                return values[name]
        missing = True
        return ""

    filled = re.sub(r"\{([^{}]+)\}", one, template)
    return None if missing else filled


@dataclass(frozen=True)
class KindTraits:
    """What the rest of memdex asks of a kind, knowing only its name (a document's ``kind``, a
    root's): the registry answers it without loading any parser (``memdex.ingest.traits_of``)."""

    # A file is one document (markdown): `memdex show` and retrieval read the file itself, with
    # its own line numbers. Otherwise (an export of many conversations) they read the index.
    one_document_per_file: bool = False
    # Named queries (schema/queries) that add counts to each root of this kind in `memdex
    # status`: each returns ``root_id`` and one column per count; a root it omits counts 0.
    root_counts: tuple[str, ...] = ()
    # Its files are an agent's session logs, which the agent deletes on its own schedule (Claude
    # Code after 30 days): a root that does not say otherwise keeps their documents when they
    # go, marked ``source deleted`` (``memdex index --keep-deleted``, ingest/departures.py).
    session_log: bool = False
    # The command that resumes a session of this agent (Resume), where the agent has one: in
    # results (``resume``) and `memdex show --resume`.
    resume: Resume | None = None
    # Its documents' keys are the agent's own session ids, the same wherever a copy of the log
    # lies: two documents of this kind and one key are one session (migration 0012). Not so for
    # Aider, whose key is the time its history starts.
    session_ids: bool = False


# Reading a session log on from where it stopped (ingest.sessions, appendable kinds).
@dataclass
class Appended:
    """The part of a session read after what was indexed: the document's fields at the new
    end, its new chunks and their size, and where the reader stopped, with its state."""

    document: Document  # chunks: the new ones only; size_bytes: what they add
    offset: int  # in the file, after the last complete line
    lines: int  # complete lines read in all
    state: dict[str, Any]
    skipped: list[tuple[str, str]]


@dataclass
class Tail:
    "Where a session was read to, and how to go on: stored with the file (``file_tails``)."

    offset: int
    lines: int
    whole_size: int  # the size when it was last read whole
    tail_sha: str
    state: dict[str, Any]


class SourceKind:
    """A kind of source: which files it reads and how it turns them into documents.

    Root kinds (``claims_root``) take a whole folder (a Serena memory folder, a chat archive);
    file kinds (``claims``) take files one by one wherever they are found.
    """

    name: str = ""
    description: str = ""
    max_bytes: int = 5 * MB
    suffixes: tuple[str, ...] = (".md", ".markdown")
    # An aggregate kind reads a whole folder as one source, through one manifest file: the
    # manifest's stored stat sums the folder's, and any change in the folder re-reads it.
    aggregate: bool = False
    # An appendable kind (a session log) grows line by line: when only new bytes were added
    # since it was read, the pipeline hands it those (``parse_append``, ingest/sessions.py).
    appendable: bool = False
    # How a record inside a file is named after the file's path: ``path#record`` (a
    # conversation in an export), ``path:line`` (a line of a session log).
    record_separator: str = "#"
    # Its KindTraits (see there); a built-in kind's are also declared in the registry.
    one_document_per_file: bool = False
    root_counts: tuple[str, ...] = ()
    session_log: bool = False
    resume: Resume | None = None
    # Where the agent keeps these files by default, for `memdex kinds` and `memdex index
    # --agents`: ``~`` is $HOME; ``$VAR/x | ~/y`` is $VAR/x when VAR is set, else ~/y (a
    # folder, or a single file).
    locations: tuple[str, ...] = ()
    # A kind that opens its file itself (a SQLite database, read through SQLite so that what
    # sits in its write-ahead log is seen): the pipeline hands ``parse`` the file's head and
    # the state saved at its last read (``SourceFile.state``), never the whole file, and
    # knows a change by the stat of the file and its companions, not by its bytes.
    opens_itself: bool = False
    # Files beside a file of this kind, named by a suffix to its name, whose change is a
    # change of it (SQLite's ``-wal``): the watcher reports them as the file itself, and
    # the file's stat includes theirs.
    companions: tuple[str, ...] = ()

    # A built-in kind's traits, as the registry declares them (``ingest.BUILT_IN``); a kind
    # registered from outside declares its own in the class attributes above.
    declared: KindTraits | None = None

    def traits(self) -> KindTraits:
        if self.declared is not None:
            return self.declared
        return KindTraits(self.one_document_per_file, self.root_counts, self.session_log, self.resume)

    def claims_root(self, root: Path) -> bool:
        "Does this folder, as a whole, belong to this kind?"
        return False

    def manifest(self, zone: Path) -> Path | None:
        "For an aggregate kind: the file that stands for the folder."
        return None

    def claims(self, rel_path: str) -> bool:
        "Would this kind read this file when it is found in a plain folder?"
        return False

    def accepts(self, rel_path: str) -> bool:
        "Can this kind read this file when the user forces it with --kind?"
        return rel_path.rpartition("/")[2].lower().endswith(self.suffixes)

    def sniff(self, data: bytes) -> bool:
        """Given a file it claims by name, is it really this kind? (JSON exports look alike.)
        Decide from the first ``SNIFF_BYTES``: a file no kind recognises there is not read."""
        return True

    def parse(self, source: SourceFile) -> ParsedFile:
        raise NotImplementedError

    def parse_append(self, source: SourceFile, tail: Tail) -> Appended:
        """For an ``appendable`` kind: ``source.data`` holds only the bytes after ``tail``'s
        offset; read them on from ``tail``'s state (see ingest/sessions.py)."""
        raise NotImplementedError
