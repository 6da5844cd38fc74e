"""Roots as a user meets them (issue 26): `memdex roots`, forgetting one, a root that is gone,
one folder reached by two paths, a file no kind reads, and a --db that is no index."""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from memdex.doors.cli import cli
from memdex.ingest.pipeline import index_known_roots, index_paths
from memdex.query.request import Filters
from memdex.query.search import search
from memdex.store import db

from .ingest.test_pipeline import fts_integrity
from .test_service import running, titles
from .test_watcher import wait_until


def run(db_path: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--db", str(db_path), *args], input=input, catch_exceptions=False)


def count(conn: sqlite3.Connection, table: str) -> int:
    return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])


@pytest.fixture
def two_roots(tmp_path: Path, db_path: Path) -> tuple[Path, Path]:
    "notes (a note, a memory, a broken memory, a bad record) and keep (one note), indexed."
    notes, keep = tmp_path / "notes", tmp_path / "keep"
    notes.mkdir()
    keep.mkdir()
    (notes / "heron.md").write_text("# Herons\n\nAbout herons wading.\n")
    (notes / "egret.memory.md").write_text("---\ntitle: Egrets\ntags: [birds]\n---\nAbout egrets.\n")
    (notes / "broken.memory.md").write_text("---\ntitle: [oops\n---\n")
    (keep / "gull.md").write_text("# Gulls\n\nAbout gulls and herons.\n")
    assert run(db_path, "index", str(notes), str(keep)).exit_code == 1  # the broken memory
    return notes, keep


def test_roots_lists_kind_counts_and_state(db_path: Path, two_roots: tuple[Path, Path]) -> None:
    notes, keep = two_roots
    data = {Path(r["path"]).name: r for r in json.loads(run(db_path, "roots", "--json").stdout)}
    assert data["notes"]["kind"] == "mixed" and data["notes"]["holds"] == {"memory": 1, "note": 1}
    assert (data["notes"]["files"], data["notes"]["documents"], data["notes"]["errors"]) == (2, 2, 1)
    assert data["notes"]["state"] == "errors"
    assert (data["keep"]["kind"], data["keep"]["state"]) == ("note", "ok")
    shutil.rmtree(keep)
    text = run(db_path, "roots").stdout.splitlines()
    assert text == [
        f"{keep}  note · 1 file, 1 document · missing: `memdex roots remove {keep}` forgets it",
        f"{notes}  mixed: memory 1, note 1 · 2 files, 2 documents · 1 problem (memdex status lists them)",
    ]


def test_index_says_what_a_mixed_root_holds(db_path: Path, two_roots: tuple[Path, Path]) -> None:
    "Previously a root of notes and memories was 'Indexed … (files)', a kind that does not exist."
    notes, keep = two_roots
    result = run(db_path, "index", str(notes), str(keep))
    assert result.stdout.splitlines()[0] == f"Indexed {notes} (mixed: memory 1, note 1), {keep} (note)"
    report = json.loads(run(db_path, "index", str(notes), "--json").stdout)
    assert report["roots"][0]["kind"] == "mixed" and report["roots"][0]["holds"] == {"memory": 1, "note": 1}


def test_remove_drops_the_root_and_all_it_held(db_path: Path, two_roots: tuple[Path, Path]) -> None:
    notes, keep = two_roots
    conn = db.connect(db_path)
    chunk_ids = [r[0] for r in conn.execute("SELECT id FROM chunks")]
    with db.transaction(conn):  # a vector for every chunk, as `memdex embed` leaves them
        for cid in chunk_ids:
            conn.execute(
                db.query("vector_upsert"),
                {"chunk_id": cid, "model": "m@128", "text_hash": str(cid), "scale": 1.0, "vector": b"\x01"},
            )
    assert count(conn, "record_errors") == 0 and count(conn, "ingest_errors") == 1
    assert [h.title for h in search(conn, "herons").hits] == ["Herons", "Gulls"]

    result = run(db_path, "roots", "remove", str(notes))  # not a terminal: no question asked
    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"Forgot {notes}: 2 files, 2 documents, 2 chunks, 2 vectors and 1 recorded problem removed.\n"
    )
    assert [h.title for h in search(conn, "herons").hits] == ["Gulls"]
    assert search(conn, "egrets").hits == []
    assert (count(conn, "roots"), count(conn, "files"), count(conn, "documents"), count(conn, "chunks")) == (
        1,
        1,
        1,
        1,
    )
    assert (count(conn, "chunk_vectors"), count(conn, "topics"), count(conn, "ingest_errors")) == (1, 0, 0)
    fts_integrity(conn)  # the full-text indexes hold exactly what the tables hold
    conn.close()
    again = run(db_path, "index")  # every remembered root: the forgotten one is not among them
    assert again.exit_code == 0 and str(notes) not in again.output


def test_forgetting_a_serena_root_takes_its_index_topics_from_other_roots(
    conn: sqlite3.Connection, sample_copy: Path
) -> None:
    "The outer root's index rows gave topics to the inner root's memories: they go with it."
    from memdex.ingest.roots import forget_root

    serena = sample_copy / "serena"
    index_paths(conn, [serena, serena / "ci"])
    flaky = "SELECT d.topics FROM documents d JOIN files f ON f.id = d.file_id WHERE f.path LIKE '%ci-flaky%'"
    assert "intermittent" in json.loads(conn.execute(flaky).fetchone()[0])
    removed = forget_root(conn, serena)
    assert (removed["path"], removed["outer_root"]) == (str(serena), None)
    assert "intermittent" not in json.loads(conn.execute(flaky).fetchone()[0])
    assert count(conn, "index_links") == 0
    fts_integrity(conn)


def test_remove_asks_on_a_terminal(db_path: Path, two_roots: tuple[Path, Path]) -> None:
    notes, _ = two_roots

    def remove(answer: bytes, *extra: str) -> tuple[int, str]:
        "memdex roots remove on a pseudo-terminal: what it printed, and its exit code."
        leader, follower = pty.openpty()
        argv = [sys.executable, "-m", "memdex", "--db", str(db_path), "roots", "remove", str(notes), *extra]
        proc = subprocess.Popen(argv, stdin=follower, stdout=follower, stderr=follower)
        os.close(follower)
        out = b""
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            if select.select([leader], [], [], 0.1)[0]:
                try:
                    chunk = os.read(leader, 4096)
                except OSError:  # the child closed the terminal
                    break
                out += chunk
                if b"[y/N]" in chunk:
                    os.write(leader, answer)
        code = proc.wait(30)
        os.close(leader)
        return code, out.decode()

    code, out = remove(b"n\n")
    assert code == 1 and f"Forget {notes} and remove its 2 files' 2 documents from the index? [y/N]" in out
    assert "Aborted" in out and titles(db_path, "egrets") == ["Egrets"]
    code, out = remove(b"", "--yes")  # never asked
    assert code == 0 and "[y/N]" not in out and f"Forgot {notes}" in out
    assert titles(db_path, "egrets") == []


def test_forget_is_remove_and_a_path_that_is_no_root_says_so(
    db_path: Path, two_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    notes, keep = two_roots
    wrong = run(db_path, "roots", "forget", str(notes / "heron.md"))
    assert wrong.exit_code == 1
    assert (
        wrong.stderr
        == f"Error: {notes / 'heron.md'} is not a root of this index; `memdex roots` lists them.\n"
    )
    link = tmp_path / "link-to-keep"
    link.symlink_to(keep)
    result = run(db_path, "roots", "forget", str(link), "--json")  # found through the symlink
    assert result.exit_code == 0
    assert json.loads(result.stdout)["path"] == str(keep)
    assert [Path(r["path"]).name for r in json.loads(run(db_path, "roots", "--json").stdout)] == ["notes"]


def test_a_missing_root_is_a_warning_that_says_how_to_forget_it(
    db_path: Path, two_roots: tuple[Path, Path], tmp_path: Path
) -> None:
    "Previously every later `memdex index` exited 1 with 'root is missing', forever."
    notes, keep = two_roots
    (notes / "broken.memory.md").unlink()
    keep.rename(tmp_path / "moved")
    result = run(db_path, "index")
    assert result.exit_code == 0, result.output
    assert (
        f"Warning: root {keep} is missing; its documents stay searchable until it returns. "
        f"If it moved or is gone for good: memdex roots remove {keep}"
    ) in result.stderr.splitlines()
    assert run(db_path, "roots", "remove", str(keep)).exit_code == 0  # gone from disk, still forgettable
    assert titles(db_path, "gulls") == []
    clean = run(db_path, "index")
    assert clean.exit_code == 0 and clean.stderr == ""


@pytest.mark.slow
def test_removing_a_root_while_the_watcher_runs(db_path: Path, two_roots: tuple[Path, Path]) -> None:
    notes, keep = two_roots
    with running(db_path) as service:
        result = run(db_path, "roots", "remove", str(keep))
        assert result.exit_code == 0, result.output
        assert "memdex watch (pid" in result.stderr and f"Forgot {keep}: 1 file" in result.stdout
        wait_until(lambda: str(keep) not in service.watcher.watches)
        (keep / "tern.md").write_text("# Terns\n\nAbout terns.\n")
        (notes / "ibis.md").write_text("# Ibises\n\nAbout ibises.\n")  # a marker: the watcher is on
        wait_until(lambda: titles(db_path, "ibises") == ["Ibises"])
        assert titles(db_path, "terns") == [] and titles(db_path, "gulls") == []


# -- one folder, two paths ---------------------------------------------------------------
def test_a_symlink_and_its_folder_are_one_root(db_path: Path, tmp_path: Path) -> None:
    "Previously a folder indexed by its path and by a symlink was two roots: every result twice."
    real = tmp_path / "real"
    real.mkdir()
    for i in range(3):
        (real / f"n{i}.md").write_text(f"# Note {i}\n\nAbout cormorants {i}.\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    first = run(db_path, "index", str(link))  # the symlink first: stored as the folder it is
    assert first.exit_code == 0
    assert f"Note: {link} is {real} through a symlink: indexed as {real}." in first.stderr.splitlines()
    second = run(db_path, "index", str(real), str(link))
    assert second.exit_code == 0
    assert second.stdout.splitlines()[1].startswith("3 files: 0 added, 0 updated, 3 unchanged")
    assert f"Note: {link} is {real}, given already: indexed once." in second.stderr.splitlines()
    conn = db.connect(db_path)
    assert [r["path"] for r in conn.execute(db.query("root_paths"))] == [str(real)]
    assert (count(conn, "files"), count(conn, "documents")) == (3, 3)
    assert [h.path for h in search(conn, "cormorants 1").hits][:1] == [str(real / "n1.md")]
    assert len({h.path for h in search(conn, "cormorants").hits}) == len(search(conn, "cormorants").hits)
    conn.close()


def test_a_root_stored_through_a_symlink_before_is_found_resolved(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "An index made before roots were resolved: its symlink root is the folder's, indexed once."
    real = tmp_path / "real"
    real.mkdir()
    (real / "a.md").write_text("# A\n\nAbout shags.\n")
    link = tmp_path / "link"
    link.symlink_to(real)
    index_paths(conn, [real])
    with db.transaction(conn):  # as an older memdex stored `memdex index link`
        conn.execute("UPDATE roots SET path = ?", (str(link),))
        conn.execute("UPDATE files SET path = ?", (str(link / "a.md"),))
    report = index_paths(conn, [real])
    assert (report.added, report.unchanged) == (0, 1)
    assert [r["path"] for r in conn.execute(db.query("root_paths"))] == [str(link)]
    # Both registered, as an older memdex left `index real` then `index link`: one is indexed,
    # and the other named as a copy to remove.
    with db.transaction(conn):
        conn.execute(
            "INSERT INTO roots (path, detected_kind, scope, added_at) VALUES (?, 'files', 'user', 'x')",
            (str(real),),
        )
    again = index_known_roots(conn)
    assert (again.added, again.unchanged) == (1, 0)  # the real folder, indexed now
    assert again.notes == [
        f"{link} is {real}, indexed too: its documents are in the index twice; "
        f"`memdex roots remove {link}` drops the second copy"
    ]


def test_a_file_no_kind_reads_is_an_error_not_a_root(db_path: Path, tmp_path: Path) -> None:
    "Previously `memdex index data.bin` printed '0 files', exited 0 and kept data.bin as a root."
    data = tmp_path / "data.xyz"
    data.write_text("not memories")
    result = run(db_path, "index", str(data))
    assert result.exit_code == 2
    assert result.stderr == (
        f"Error: {data}: no source kind reads .xyz files, so nothing was indexed. `memdex kinds` "
        "lists the kinds (notes, memories, chat exports, ...) and the files they read; give a "
        "folder to index what it holds.\n"
    )
    forced = run(db_path, "index", str(data), "--kind", "note")
    assert forced.exit_code == 2 and "--kind note reads .md, .markdown files, not this one" in forced.stderr
    assert json.loads(run(db_path, "roots", "--json").stdout) == []


def test_one_run_with_a_root_and_a_root_inside_it(db_path: Path, tmp_path: Path) -> None:
    "Previously the inner root's files, queued under the outer one, were inserted twice: a crash."
    outer = tmp_path / "outer"
    (outer / "inner").mkdir(parents=True)
    (outer / "a.md").write_text("# A\n\nAbout auks.\n")
    (outer / "inner" / "b.md").write_text("# B\n\nAbout boobies.\n")
    result = run(db_path, "index", str(outer), str(outer / "inner"))
    assert result.exit_code == 0, result.output
    conn = db.connect(db_path)
    owner = "SELECT r.path FROM files f JOIN roots r ON r.id = f.root_id WHERE f.path = ?"
    assert conn.execute(owner, (str(outer / "inner" / "b.md"),)).fetchone()[0] == str(outer / "inner")
    assert count(conn, "documents") == 2
    conn.close()


# -- paths as typed ----------------------------------------------------------------------
def test_relative_paths_are_stored_absolute(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    "Previously `--db ../my.db watch --install systemd` wrote ../my.db into a unit run from $HOME."
    work = tmp_path / "work"
    (work / "notes").mkdir(parents=True)
    (work / "notes" / "a.md").write_text("# A\n\nAbout avocets.\n")
    monkeypatch.chdir(work / "notes")
    result = CliRunner().invoke(
        cli,
        ["--db", "../my.db", "watch", ".", "--install", "systemd", "--log-file", "../watch.log"],
        catch_exceptions=False,
    )
    assert result.exit_code == 0
    (exec_start,) = [ln for ln in result.stdout.splitlines() if ln.startswith("ExecStart=")]
    assert f" --db {work / 'my.db'} watch {work / 'notes'} --log-file {work / 'watch.log'}" in exec_start
    assert CliRunner().invoke(cli, ["--db", "../my.db", "index", "."]).exit_code == 0
    monkeypatch.chdir(tmp_path)
    status = json.loads(CliRunner().invoke(cli, ["--db", "work/my.db", "status", "--json"]).stdout)
    assert status["database"]["path"] == str(work / "my.db")
    assert [r["path"] for r in status["roots"]] == [str(work / "notes")]


@pytest.mark.parametrize(
    "args",
    [
        ("index", "{notes}"),
        ("watch", "{notes}"),
        ("roots",),
        ("roots", "remove", "{notes}", "--yes"),
        ("status",),
    ],
)
def test_a_db_that_is_no_index_leaves_nothing_behind(tmp_path: Path, args: tuple[str, ...]) -> None:
    "Previously a .lock file was left beside it (and `memdex watch` crashed with a traceback)."
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nAbout avocets.\n")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    result = CliRunner().invoke(
        cli, ["--db", str(notes / "a.md"), *(a.format(notes=notes) for a in args)], catch_exceptions=False
    )
    assert result.exit_code == 1
    assert result.stderr == f"Error: Cannot open {notes / 'a.md'} as a memdex index: file is not a database\n"
    assert sorted(p.name for p in tmp_path.rglob("*")) == before


def test_a_session_reached_under_two_roots_is_one_result(conn: sqlite3.Connection, tmp_path: Path) -> None:
    """Previously a session log copied under another root (a backup of ~/.claude/projects) was
    two results. Kept: the copy whose file is there and longest; a search, a listing by date
    and `show KEY` find that one alone, and the other takes its place when it goes."""
    from .conftest import shared

    session = "daaain-claude-code-log/-Users-dain-workspace-claude-code-log-sample"
    live = tmp_path / "home" / ".claude" / "projects"
    backup = tmp_path / "backup"
    for root in (live, backup):
        shutil.copytree(shared("chats", "claude-code", session), root / "sample")
    log = "326189cf-5676-4237-8cde-1ce80aae4a9f.jsonl"
    with open(live / "sample" / log, "a") as f:  # the live log went on after the copy was taken
        line = json.loads((live / "sample" / log).read_text().splitlines()[-1])
        line.update(uuid="after-the-copy", parentUuid=line.get("uuid"), type="user")
        line["message"] = {"role": "user", "content": "One more thing: keep the cache for a week."}
        f.write(json.dumps(line) + "\n")
    index_paths(conn, [backup])
    index_paths(conn, [live])
    rows = conn.execute(
        "SELECT d.id, f.path, d.copy_of FROM documents d JOIN files f ON f.id = d.file_id "
        "WHERE d.key = ? ORDER BY d.id",
        (log.removesuffix(".jsonl"),),
    ).fetchall()
    assert len(rows) == 2  # both indexed: each root is whole on its own
    (kept,) = [r["id"] for r in rows if r["copy_of"] is None]
    assert dict((r["id"], r["path"]) for r in rows)[kept].startswith(str(live))
    for granularity in ("chat", "chunk"):
        hits = search(conn, "caching timestamp", granularity=granularity, limit=20).hits
        assert hits and {h.id for h in hits} == {kept}, (granularity, [(h.id, h.path) for h in hits])
    assert {h.id for h in search(conn, "July 2025", limit=20).hits} == {kept}  # a query of dates alone
    filtered = search(conn, "caching", filters=Filters(platform="claude-code")).hits
    assert {h.id for h in filtered} == {kept}  # filtered too
    # the live log gone (Claude Code deletes old sessions; memdex keeps them, marked): the copy
    # whose file is there is the session now
    shutil.rmtree(live / "sample")
    index_paths(conn, [live])
    left = search(conn, "caching timestamp", limit=20).hits
    assert [h.path for h in left] and all(h.path.startswith(str(backup)) for h in left)
    assert len({h.id for h in left}) == 1


def test_two_projects_whose_aider_histories_start_in_the_same_second_are_two_sessions(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "Review of #38: Aider's key is the time its history starts, not a session id: no copy of each other."
    from .conftest import shared

    real = shared("chats", "aider", "AFI-Protocol-afi-core", ".aider.chat.history.md").read_text()
    first = real.split("\n# aider chat started at ", 2)
    start = "\n# aider chat started at " + first[1].split("\n", 1)[0] + "\n"
    for project, word in (("a", "walrusine"), ("b", "pelicanthe")):
        (tmp_path / project).mkdir()
        (tmp_path / project / ".aider.chat.history.md").write_text(
            f"{start}\n#### Please rename the {word} module.\n"
        )
    index_paths(conn, [tmp_path / "a", tmp_path / "b"])
    assert conn.execute("SELECT count(*) FROM documents WHERE copy_of IS NOT NULL").fetchone()[0] == 0
    assert len(search(conn, "walrusine").hits) == 1 and len(search(conn, "pelicanthe").hits) == 1


def test_forgetting_the_root_of_the_kept_session_shows_its_copy_at_once(
    conn: sqlite3.Connection, tmp_path: Path
) -> None:
    "Review of #38: the copy named a deleted document and was hidden until the next index run."
    from memdex.ingest.roots import forget_root

    from .conftest import shared

    session = "daaain-claude-code-log/-Users-dain-workspace-claude-code-log-sample"
    live, backup = tmp_path / "live", tmp_path / "backup"
    shutil.copytree(shared("chats", "claude-code", session), live / "sample")
    shutil.copytree(shared("chats", "claude-code", session), backup / "sample")
    index_paths(conn, [live, backup])
    assert conn.execute("SELECT count(*) FROM documents WHERE copy_of IS NOT NULL").fetchone()[0] >= 1
    before = {h.id for h in search(conn, "caching timestamp", limit=20).hits}
    forget_root(
        conn,
        live if any(h.path.startswith(str(live)) for h in search(conn, "caching timestamp").hits) else backup,
    )
    after = search(conn, "caching timestamp", limit=20).hits
    assert after and before.isdisjoint({h.id for h in after})
