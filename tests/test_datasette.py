"""memdex datasette: a real Datasette server on a free loopback port, asked over HTTP."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from memdex.doors.cli import cli
from memdex.ingest.pipeline import index_paths
from memdex.query.search import search
from memdex.store import db

pytest.importorskip("datasette", reason="the test extra installs datasette")

REPO = Path(__file__).resolve().parent.parent
CANNED = [
    "search",
    "layer_1_topics",
    "layer_2_topics_synonyms",
    "layer_3_content",
    "layer_4_content_synonyms",
    "dated",
]


class Server:
    def __init__(self, db_path: Path, log: Path) -> None:
        self.db = db_path.stem
        self.log = log
        with log.open("wb") as stderr:  # the server keeps its own copy of the descriptor
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "memdex", "--db", str(db_path), "datasette", "--port", "0"],
                stdout=subprocess.DEVNULL,
                stderr=stderr,
                env={**os.environ, "MEMDEX_RAISE_ERRORS": "1"},
            )
        self.base = self._wait_for_port()

    def _wait_for_port(self) -> str:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            m = re.search(
                r"Uvicorn running on (http://127\.0\.0\.1:\d+)", self.log.read_text(errors="replace")
            )
            if m:
                base = m.group(1)
                try:
                    with urllib.request.urlopen(base + "/-/versions.json", timeout=2):
                        return base
                except OSError:
                    pass
            assert self.proc.poll() is None, self.log.read_text()
            time.sleep(0.05)
        raise AssertionError("memdex datasette did not start: " + self.log.read_text())

    def get(self, path: str, **params: Any) -> Any:
        url = f"{self.base}{path}" + ("?" + urllib.parse.urlencode(params) if params else "")
        with urllib.request.urlopen(url, timeout=30) as response:
            body = response.read()
        return json.loads(body) if path.endswith(".json") else body.decode()

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@pytest.fixture(scope="module")
def serena_copy(serena_db: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    "A copy of the session's Serena index: the server opens it, and this module writes to it."
    target = tmp_path_factory.mktemp("ds") / "serena.db"
    source = sqlite3.connect(serena_db)
    dest = sqlite3.connect(target)
    source.backup(dest)
    source.close()
    dest.close()
    return target


@pytest.fixture(scope="module")
def server(serena_copy: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = Server(serena_copy, tmp_path_factory.mktemp("ds-log") / "datasette.log")
    yield running
    running.stop()


def test_the_search_box_finds_a_word_family_and_japanese(tmp_path: Path) -> None:
    "Issue 35: the plugin's escape_fts hands Datasette's search box the index's tokens."
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Release notes\n\nThe deployment went fine.\n")
    (notes / "b.md").write_text("# 会議\n\n東京でのミーティングは来週の火曜日です\n")
    db_path = tmp_path / "w.db"
    conn = db.connect(db_path)
    index_paths(conn, [notes])
    conn.close()
    server = Server(db_path, tmp_path / "datasette.log")
    try:
        for typed, title in [("deploys", "Release notes"), ("東京", "会議"), ("火曜日", "会議")]:
            data = server.get(f"/{server.db}/chunks.json", _search=typed, _shape="objects", _sort="id")
            assert [r["heading"] for r in data["rows"]] == [title], typed
    finally:
        server.stop()


def test_typing_worktree_in_the_chunks_search_box_shows_matching_chunks(server: Server) -> None:
    page = server.get(f"/{server.db}/chunks")
    assert 'name="_search"' in page  # the search box is there
    data = server.get(f"/{server.db}/chunks.json", _search="worktree", _shape="objects", _size="50")
    assert data["filtered_table_rows_count"] > 100
    for row in data["rows"]:
        assert "worktree" in (row["text"] + row["heading"]).lower()


def test_documents_search_facets_and_labels(server: Server) -> None:
    data = server.get(f"/{server.db}/documents.json", _search="worktree", _shape="objects")
    assert data["filtered_table_rows_count"] > 10
    facets = data["facet_results"]
    facets = facets.get("results", facets)  # the shape differs between Datasette releases
    assert {"kind", "namespace", "type", "platform", "tags"} <= set(facets)
    kinds = {f["value"]: f["count"] for f in facets["kind"]["results"]}
    assert kinds == {"serena": data["filtered_table_rows_count"]}
    html = server.get(f"/{server.db}/documents")
    assert "Estimated tokens (bytes / 4)" in html  # a labelled column
    bodies = server.get(f"/{server.db}/document_bodies.json", _search="worktree")
    assert bodies["filtered_table_rows_count"] > 10  # the view's FTS with its id as key


@pytest.mark.parametrize("name", CANNED)
def test_each_canned_query_answers_q(server: Server, name: str) -> None:
    rows = server.get(f"/{server.db}/{name}.json", q="worktree cleanup", _shape="array")
    assert rows and all("title" in r for r in rows)


def test_the_cascade_canned_query_ranks_as_memdex_search_does(server: Server, serena_copy: Path) -> None:
    conn = sqlite3.connect(serena_copy)
    conn.row_factory = sqlite3.Row
    for q in ("worktree", "stale worktree folders", "What problems have we had with Copilot hooks?"):
        rows = server.get(f"/{server.db}/search.json", q=q, _shape="array")
        ranked = search(conn, q, limit=20).hits
        assert rows[0]["document_id"] == ranked[0].id, q
        assert [r["document_id"] for r in rows] == [h.id for h in ranked]
    conn.close()


def test_the_dated_canned_query_lists_a_range_as_memdex_search_lists_a_period(
    server: Server, serena_copy: Path
) -> None:
    "Issue 17: a date range, newest first, each row saying where its date came from."
    conn = sqlite3.connect(serena_copy)
    conn.row_factory = sqlite3.Row
    rows = server.get(f"/{server.db}/dated.json", since="2026-05", until="2026-05", _shape="array")
    listed = search(conn, "May 2026", limit=100).hits
    conn.close()
    assert [r["document_id"] for r in rows] == [h.id for h in listed] and rows
    assert all(r["date"].startswith("2026-05") and r["date_source"] for r in rows)
    everything = server.get(f"/{server.db}/dated.json", _shape="array")
    dates = [r["date"] for r in everything]
    assert len(dates) > len(rows) and dates == sorted(dates, reverse=True)


def test_layer_queries_show_the_match_they_ran(server: Server) -> None:
    (row, *_) = server.get(
        f"/{server.db}/layer_4_content_synonyms.json", q="problems worktree", _shape="array"
    )
    # the tokens (memdex.tokens): "problems" is the term's token, so the synonym "problem" is not repeated
    assert (
        row["match_expression"]
        == '("problem" OR "issu" OR "error" OR "bug" OR "failur" OR "troubl") AND "worktre"'
    )
    assert "«" in row["snippet"]  # memdex_snippet marks the words in the chunk's own text


@pytest.mark.parametrize("q", ['NEAR("', "a AND OR", "*", '"', "-x", "col:umn", "ß🙂", "x" * 10_000, ""])
def test_hostile_q_never_breaks_a_canned_query(server: Server, q: str) -> None:
    for name in CANNED:
        rows = server.get(f"/{server.db}/{name}.json", q=q, _shape="array")
        assert isinstance(rows, list)


def test_served_read_only(server: Server) -> None:
    sql = "DELETE FROM documents"
    with pytest.raises(urllib.error.HTTPError) as err:
        server.get(f"/{server.db}.json", sql=sql)
    err.value.close()
    assert err.value.code in (400, 403)
    assert server.get(f"/{server.db}/documents.json")["filtered_table_rows_count"] > 900


def test_the_server_sees_what_a_writer_commits(server: Server, serena_copy: Path, tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "fresh.md").write_text("# Zanzibar protocol\n\nThe zanzibarish handshake.\n")
    conn = db.connect(serena_copy)
    index_paths(conn, [notes])
    conn.close()
    data = server.get(f"/{server.db}/chunks.json", _search="zanzibarish")
    assert data["filtered_table_rows_count"] == 1


def test_without_datasette_the_command_says_how_to_install_it(
    sample: sqlite3.Connection, db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "datasette.cli", None)
    result = CliRunner().invoke(cli, ["--db", str(db_path), "datasette"])
    assert result.exit_code == 1
    assert "Datasette is not installed: pip install 'memdex[datasette]'" in result.stderr


def test_off_loopback_needs_allow_remote(sample: sqlite3.Connection, db_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(db_path), "datasette", "--host", "0.0.0.0"])
    assert result.exit_code == 2 and "--allow-remote" in result.stderr


def test_metadata_names_the_database_and_every_canned_query(db_path: Path) -> None:
    result = CliRunner().invoke(cli, ["--db", str(db_path), "datasette", "--metadata"])
    data = json.loads(result.stdout)
    database = data["databases"][db_path.stem]
    assert sorted(database["queries"]) == sorted(CANNED)
    assert all(q["title"] and q["description"] for q in database["queries"].values())


def test_the_screenshot_script(serena_copy: Path, tmp_path: Path) -> None:
    "scripts/screenshot.py types a query in the search box of headless Chromium (Debian's)."
    if not (shutil.which("chromium") and shutil.which("chromedriver")):
        pytest.skip("needs Debian's chromium and chromium-driver (.ci/run installs them)")
    out = tmp_path / "search.png"
    run = subprocess.run(
        [
            sys.executable,
            str(REPO / "scripts" / "screenshot.py"),
            "--db",
            str(serena_copy),
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(run.stdout)
    assert 'search matches "worktree"' in report["heading"] and "_search=worktree" in report["url"]
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


def _status_and_location(url: str) -> tuple[int, str | None]:
    opener = urllib.request.build_opener(_NoRedirect)
    try:
        with opener.open(url, timeout=30) as response:
            return response.status, None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.headers.get("location")


@pytest.mark.parametrize(
    ("table", "canned"), [("documents", "layer_1_topics"), ("chunks", "layer_3_content")]
)
def test_a_table_search_box_lists_matches_by_relevance(server: Server, table: str, canned: str) -> None:
    "Previously the table page listed matches by id (issue 13)."
    status, location = _status_and_location(f"{server.base}/{server.db}/{table}?_search=worktree")
    assert status == 302 and location == f"/{server.db}/{canned}?q=worktree"
    rows = server.get(f"/{server.db}/{canned}.json", q="worktree", _shape="array")
    scores = [r["score"] for r in rows]
    assert len(scores) > 3 and scores == sorted(scores)  # bm25: lower is better, best first
    page = server.get(location)
    assert rows[0]["title"] in page
    # an explicit sort, a facet or the JSON API stay Datasette's own table view
    for kept in (
        f"{table}?_search=worktree&_sort=id",
        f"{table}?_search=worktree&kind=serena",
        f"{table}.json?_search=worktree",
    ):
        assert _status_and_location(f"{server.base}/{server.db}/{kept}") == (200, None)


class _FilterForm(HTMLParser):
    "The fields a browser sends from a table page's search form: each input, select and checked box."

    def __init__(self) -> None:
        super().__init__()
        self.action, self.fields, self._in_form, self._select = "", [], False, ""
        self._options: list[tuple[str, bool]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "form" and "filters" in (a.get("class") or ""):
            self._in_form, self.action = True, a["action"] or ""
        elif self._in_form and tag == "input" and a.get("name"):
            if a.get("type") != "checkbox" or "checked" in a:
                self.fields.append(
                    (a["name"] or "", a.get("value") or ("on" if a.get("type") == "checkbox" else ""))
                )
        elif self._in_form and tag == "select":
            self._select, self._options = a.get("name") or "", []
        elif self._select and tag == "option":
            self._options.append((a.get("value") or "", "selected" in a))

    def handle_endtag(self, tag: str) -> None:
        if tag == "select" and self._select:
            chosen = [v for v, selected in self._options if selected] or [v for v, _ in self._options[:1]]
            self.fields.append((self._select, chosen[0] if chosen else ""))
            self._select = ""
        elif tag == "form":
            self._in_form = False


@pytest.mark.parametrize(
    ("table", "order"), [("documents", "sorted by date descending"), ("chunks", "sorted by id")]
)
def test_a_search_typed_in_the_box_stays_on_the_table_page(server: Server, table: str, order: str) -> None:
    "What docs/datasette.md says the box does: the form sends the page's sort, so no redirect (#26)."
    form = _FilterForm()
    form.feed(server.get(f"/{server.db}/{table}"))
    sent = [(k, "worktree" if k == "_search" else v) for k, v in form.fields]
    assert ("_search", "worktree") in sent and any(k == "_sort" for k, _ in sent)
    with urllib.request.urlopen(
        f"{server.base}{form.action}?{urllib.parse.urlencode(sent)}", timeout=30
    ) as r:
        landed, page = urllib.parse.urlsplit(r.geturl()).path, r.read().decode()
    assert landed == f"/{server.db}/{table}"  # not a canned query
    assert f"search matches &#34;worktree&#34; {order}" in page
    if table == "documents":
        assert 'id="facet-kind"' in page and 'id="facet-namespace"' in page


def test_the_addresses_on_the_datasette_page_answer_for_any_database_name(server: Server) -> None:
    "Previously docs/datasette.md wrote /memdex/…, true only of a file named memdex.db (#26)."
    page = (REPO / "docs" / "datasette.md").read_text()
    addresses = set(re.findall(r"`(/<name>/[^`\s]+)`", page))
    assert len(addresses) >= 8, addresses
    assert server.db != "memdex"
    for address in sorted(addresses):
        url = server.base + address.replace("<name>", server.db)
        with urllib.request.urlopen(url, timeout=30) as response:  # redirects followed
            assert response.status == 200, address
            if ".json" in address:
                assert isinstance(json.loads(response.read()), list | dict), address


@pytest.mark.slow
def test_a_table_search_ranks_on_a_database_whose_name_is_encoded(serena_copy: Path, tmp_path: Path) -> None:
    """Datasette addresses work.notes.db as /work~2Enotes/: the ranked search found no database
    of that name and, had it, sent the browser to /work.notes/..., a 404 (issue 26)."""
    named = tmp_path / "work.notes.db"
    source, dest = sqlite3.connect(serena_copy), sqlite3.connect(named)
    source.backup(dest)
    source.close()
    dest.close()
    server = Server(named, tmp_path / "server.log")
    try:
        status, location = _status_and_location(f"{server.base}/work~2Enotes/chunks?_search=worktree")
        assert status == 302 and location == "/work~2Enotes/layer_3_content?q=worktree"
        rows = server.get(f"{location.partition('?')[0]}.json", q="worktree", _shape="array")
        assert rows and all("worktree" in (r["snippet"] + r["title"]).lower() for r in rows[:3])
    finally:
        server.stop()
