"""Meaning by default (issue 39): `memdex index` gives new chunks vectors after the words with
the model memdex ships, newest documents first; `--no-semantic` and $MEMDEX_INDEX_SEMANTIC=0
keep to words; a running `memdex watch` embeds in the background and answers the command line.

Every other test runs with $MEMDEX_INDEX_SEMANTIC=0 (conftest): these unset it."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.doors.serve import client
from memdex.query.meaning.embed import embed, passage_encoder
from memdex.query.meaning.model import load_spec, resolve_model
from memdex.store import db

from .test_serve import memdex, served_count, server_env
from .test_watcher import wait_until

pytestmark = pytest.mark.slow

NOTES = {
    "deploy.md": "# Deploy keys\n\nRotate the deploy key every ninety days; the old one is revoked after the switch.\n",
    "garden.md": "# Tomatoes\n\nWater the tomato beds at dawn and stake the tall plants before July.\n",
    "money.md": "# Budget\n\nThe quarterly budget review moved to the first Monday of the month.\n",
}
PARAPHRASE = "when should vegetables in the garden get their water"  # shares no word with garden.md
PACKAGED = load_spec(resolve_model(None)).name


@pytest.fixture(autouse=True)
def meaning_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MEMDEX_INDEX_SEMANTIC")


def notes(folder: Path) -> Path:
    "The three notes, garden.md the newest and deploy.md the oldest by a day each."
    folder.mkdir()
    for age, name in enumerate(("garden.md", "money.md", "deploy.md")):
        (folder / name).write_text(NOTES[name], encoding="utf-8")
        stamp = 1_760_000_000 - age * 86_400
        os.utime(folder / name, (stamp, stamp))
    return folder


def invoke(*args: str) -> dict[str, object]:
    done = CliRunner().invoke(cli, [*args, "--json"], catch_exceptions=False)
    assert done.exit_code == 0, done.output
    return dict(json.loads(done.stdout))


def vectors(db_path: Path) -> int:
    with sqlite3.connect(db_path) as conn:
        return int(conn.execute("SELECT count(*) FROM chunk_vectors").fetchone()[0])


def test_index_then_a_paraphrase_is_found_by_meaning_with_no_model_named(tmp_path: Path) -> None:
    folder, db_path = notes(tmp_path / "notes"), tmp_path / "n.db"
    report = invoke("--db", str(db_path), "index", str(folder))
    meaning = report["semantic"]
    assert isinstance(meaning, dict)
    assert meaning["embedded"] == len(NOTES) and str(meaning["model"]).startswith(PACKAGED + "@")
    found = invoke("--db", str(db_path), "search", PARAPHRASE)
    assert found["semantic"]["used"] is True  # type: ignore[index]
    assert found["results"][0]["path"].endswith("garden.md")  # type: ignore[index]
    again = invoke("--db", str(db_path), "index")  # nothing new: nothing embedded, nothing loaded
    assert again["semantic"] == {
        **meaning,
        "embedded": 0,
        "reused": 0,
        "windows": 0,
        "seconds": 0.0,
        "cpu_seconds": 0.0,
        "matrix": "current",
    }
    (folder / "garden.md").unlink()
    gone = invoke("--db", str(db_path), "index")
    assert gone["semantic"]["removed"] == 1 and gone["semantic"]["matrix"] == "written"  # type: ignore[index]
    assert vectors(db_path) == len(NOTES) - 1
    text = CliRunner().invoke(cli, ["--db", str(db_path), "index"], catch_exceptions=False).stdout
    assert "Meaning: every chunk has its vector" in text


def test_words_only_by_flag_or_by_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = notes(tmp_path / "notes")
    report = invoke("--db", str(tmp_path / "a.db"), "index", str(folder), "--no-semantic")
    assert "semantic" not in report and vectors(tmp_path / "a.db") == 0
    found = invoke("--db", str(tmp_path / "a.db"), "search", PARAPHRASE)
    assert found["semantic"]["used"] is False  # type: ignore[index]
    monkeypatch.setenv("MEMDEX_INDEX_SEMANTIC", "off")
    report = invoke("--db", str(tmp_path / "b.db"), "index", str(folder))
    assert "semantic" not in report and vectors(tmp_path / "b.db") == 0
    report = invoke("--db", str(tmp_path / "b.db"), "index", "--semantic")  # the flag wins
    assert report["semantic"]["embedded"] == len(NOTES)  # type: ignore[index]
    text = CliRunner().invoke(cli, ["--db", str(tmp_path / "a.db"), "status"], catch_exceptions=False).stdout
    assert "Meaning: off, no vectors yet (`memdex index` or `memdex embed` makes them)" in text


def test_vectors_are_made_newest_document_first(tmp_path: Path) -> None:
    folder, db_path = notes(tmp_path / "notes"), tmp_path / "n.db"
    invoke("--db", str(db_path), "index", str(folder), "--no-semantic")
    conn = db.connect(db_path)
    encoder = passage_encoder(load_spec(resolve_model(None)))
    order = []
    for _ in NOTES:
        assert embed(conn, encoder, limit=1).embedded == 1
        order += [
            Path(r[0]).name
            for r in conn.execute(
                "SELECT f.path FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id "
                "JOIN documents d ON d.id = c.document_id JOIN files f ON f.id = d.file_id"
            )
            if Path(r[0]).name not in order
        ]
    conn.close()
    assert order == ["garden.md", "money.md", "deploy.md"]


def test_the_watcher_embeds_an_index_of_words_in_the_background_and_answers_searches(tmp_path: Path) -> None:
    "An index built words-only (as by an earlier memdex) gains vectors under `memdex watch`, served."
    folder, db_path = notes(tmp_path / "notes"), tmp_path / "n.db"
    invoke("--db", str(db_path), "index", str(folder), "--no-semantic")
    env = {k: v for k, v in server_env().items() if k != "MEMDEX_INDEX_SEMANTIC"}
    log = tmp_path / "watch.log"
    with open(log, "ab") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "memdex", "--db", str(db_path), "watch"], stderr=out, env=env
        )
    try:

        def embedded_and_warm() -> bool:
            assert proc.poll() is None, log.read_text()
            state = client.ping(str(db_path)) or {}
            return bool(state.get("warm")) and vectors(db_path) == len(NOTES)

        wait_until(embedded_and_warm, timeout=120)
        before = served_count(db_path)
        code, out_text, err = memdex(db_path, "search", PARAPHRASE, "--json", **env)
        assert code == 0, err
        assert served_count(db_path) == (before[0] + 1, before[1]), "the watcher did not answer it"
        found = json.loads(out_text)
        assert found["semantic"]["used"] is True and found["results"][0]["path"].endswith("garden.md")
        code, out_text, err = memdex(db_path, "status", "--json", served=False)
        status = json.loads(out_text)
        assert status["semantic"]["models"][0]["vectors"] == status["semantic"]["chunks"] == len(NOTES)
        assert status["server"]["running"] is True and status["server"]["command"] == "memdex watch"
        code, out_text, err = memdex(db_path, "status", served=False)
        assert f"Server: memdex watch (pid {proc.pid}," in out_text
        # A new note: words at once, its vector after, from the same process.
        (folder / "bikes.md").write_text("# Bicycle\n\nThe chain needs oil after the rainy rides.\n")
        wait_until(lambda: vectors(db_path) == len(NOTES) + 1, timeout=60)
        # A new root handed over by `memdex index`: the watcher embeds it too.
        more = tmp_path / "more"
        more.mkdir()
        (more / "tea.md").write_text("# Tea\n\nGreen tea wants water below boiling, about eighty degrees.\n")
        code, out_text, err = memdex(db_path, "index", str(more), "--json", served=False, **env)
        assert code == 0 and "it does this indexing" in err, err
        assert "semantic" not in json.loads(out_text)  # the watcher's to make, not this command's
        wait_until(lambda: vectors(db_path) == len(NOTES) + 2, timeout=60)
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0, log.read_text()


def test_the_library_indexes_as_the_command_line_does(tmp_path: Path) -> None:
    import memdex

    folder = notes(tmp_path / "notes")
    with memdex.Index(tmp_path / "words.db") as index:
        assert "semantic" not in index.index(folder, semantic=False)
    with memdex.Index(tmp_path / "n.db") as index:
        report = index.index(folder)
        assert report["semantic"]["embedded"] == len(NOTES)
        found = index.search(PARAPHRASE)
        assert found.semantic is not None and found.semantic["used"] is True
        assert found.hits[0].path.endswith("garden.md")
    assert vectors(tmp_path / "words.db") == 0


def test_a_run_with_nothing_new_loads_neither_numpy_nor_the_model(tmp_path: Path) -> None:
    "A re-index that finds nothing changed costs what a words-only one does (no numpy import)."
    folder, db_path = notes(tmp_path / "notes"), tmp_path / "n.db"
    invoke("--db", str(db_path), "index", str(folder))
    code = (
        "import json, sys, memdex; r = memdex.Index(sys.argv[1]).index(sys.argv[2]); "
        "print(json.dumps({'numpy': 'numpy' in sys.modules, 'semantic': r['semantic']}))"
    )

    def again() -> dict[str, object]:
        done = subprocess.run(
            [sys.executable, "-c", code, str(db_path), str(folder)],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout))

    quiet = again()
    assert quiet["numpy"] is False
    assert quiet["semantic"]["embedded"] == 0 and quiet["semantic"]["matrix"] == "current"  # type: ignore[index]
    matrix = db_path.with_name(db_path.name + ".vectors")
    matrix.unlink()  # something to do after all: the full path writes the file again
    rebuilt = again()
    assert rebuilt["numpy"] is True and rebuilt["semantic"]["matrix"] == "written"  # type: ignore[index]
    (folder / "tea.md").write_text("# Tea\n\nGreen tea wants water below boiling.\n", encoding="utf-8")
    new = again()
    assert new["semantic"]["embedded"] == 1  # type: ignore[index]


def test_a_model_that_cannot_be_had_is_reported_and_the_words_stay(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    "Indexing never fails for the vectors: the report says why there are none, and the words are in."
    folder, db_path = notes(tmp_path / "notes"), tmp_path / "n.db"
    monkeypatch.setenv("MEMDEX_EMBED_MODEL", str(tmp_path / "no-such-model"))
    report = invoke("--db", str(db_path), "index", str(folder))
    assert report["added"] == len(NOTES) and vectors(db_path) == 0
    assert "no vectors made" in report["semantic"]["skipped"]  # type: ignore[index]
    assert "no-such-model" in report["semantic"]["skipped"]  # type: ignore[index]
    done = CliRunner().invoke(cli, ["--db", str(db_path), "index", str(folder)], catch_exceptions=False)
    assert done.exit_code == 0
    assert "3 unchanged" in done.stdout and "Words only: no vectors made" in done.stdout


def test_the_index_model_named_by_the_environment_is_the_one_used(
    tmp_path: Path, minilm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, db_path = notes(tmp_path / "notes"), tmp_path / "n.db"
    monkeypatch.setenv("MEMDEX_EMBED_MODEL", str(minilm))
    invoke("--db", str(db_path), "index", str(folder))
    with sqlite3.connect(db_path) as conn:
        assert conn.execute("SELECT source FROM embedding_models").fetchone()[0] == str(minilm.resolve())


def test_vectors_never_switch_model_silently_when_the_index_model_is_gone(
    tmp_path: Path, minilm: Path
) -> None:
    "fp32 vectors of a folder since deleted: a new note waits for `memdex embed` to choose."
    import shutil

    model = tmp_path / "model"
    shutil.copytree(minilm, model)
    folder, db_path = notes(tmp_path / "notes"), tmp_path / "n.db"
    invoke("--db", str(db_path), "index", str(folder), "--no-semantic")
    invoke("--db", str(db_path), "embed", "--model", str(model), "--precision", "fp32")
    shutil.rmtree(model)
    (folder / "tea.md").write_text("# Tea\n\nGreen tea wants water below boiling.\n", encoding="utf-8")
    report = invoke("--db", str(db_path), "index")
    assert "no longer at" in report["semantic"]["skipped"]  # type: ignore[index]
    assert vectors(db_path) == len(NOTES)  # nothing embedded with another model


def test_a_server_that_cannot_start_gives_back_the_writer_lock(tmp_path: Path) -> None:
    "Its HTTP port taken: the watcher it opened lets go of the index, for whoever comes next."
    import socket

    from memdex.doors.serve.http import HttpServer, HttpSettings
    from memdex.doors.serve.server import Server
    from memdex.errors import MemdexError
    from memdex.store.lock import holder
    from memdex.watch.service import WatchService

    folder, db_path = notes(tmp_path / "notes"), tmp_path / "n.db"
    invoke("--db", str(db_path), "index", str(folder), "--no-semantic")
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    try:
        http = HttpServer(db_path, HttpSettings("127.0.0.1", taken.getsockname()[1]))
        server = Server(db_path, watcher=WatchService(db_path, []), http=http)
        with pytest.raises((MemdexError, OSError)):
            server.run()
    finally:
        taken.close()
    assert holder(db_path) is None
    assert not Path(f"{db_path}.sock").exists()
