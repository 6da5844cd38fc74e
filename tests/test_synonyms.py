import sqlite3
from pathlib import Path

import pytest

from memdex.errors import InvalidParameter
from memdex.query import synonyms
from memdex.query.terms import parse_query
from memdex.store import db


def _expanded(conn: sqlite3.Connection, text: str) -> dict[str, list[str]]:
    terms = synonyms.expand(conn, parse_query(text).key_terms)
    return {t.text: [s.text for s in t.synonyms] for t in terms}


def test_both_directions(conn: sqlite3.Connection) -> None:
    assert _expanded(conn, "Chatty") == {"chatty": ["chatgpt", "gpt"]}
    assert _expanded(conn, "chatgpt") == {"chatgpt": ["chatty", "gpt"]}


def test_stems_reach_the_group(conn: sqlite3.Connection) -> None:
    # "problems" reaches the group of "problem", which is its own token: not repeated (#35)
    assert _expanded(conn, "problems")["problems"][:2] == ["issue", "error"]
    assert "decision" in _expanded(conn, "decide")["decide"]


def test_a_prefix_is_not_a_match(conn: sqlite3.Connection) -> None:
    synonyms.add(conn, "machine learning", ["ml"])
    assert _expanded(conn, "machine") == {"machine": []}


def test_multi_word_synonyms_merge_adjacent_words(conn: sqlite3.Connection) -> None:
    synonyms.add(conn, "machine learning", ["ml", "statistical learning"])
    assert _expanded(conn, "machine learning models") == {
        "machine learning": ["ml", "statistical learning"],
        "models": [],
    }
    assert _expanded(conn, "ml") == {"ml": ["machine learning", "statistical learning"]}


def test_a_synonym_added_elsewhere_reaches_a_connection_that_expanded_before(
    conn: sqlite3.Connection, db_path: Path
) -> None:
    "Issue 16: expansions are kept with the connection, but only while the index is unchanged."
    assert _expanded(conn, "zorblat") == {"zorblat": []}
    other = db.connect(db_path)
    synonyms.add(other, "zorblat", ["quux"])
    other.close()
    assert _expanded(conn, "zorblat") == {"zorblat": ["quux"]}
    synonyms.remove(conn, "zorblat")
    assert _expanded(conn, "zorblat") == {"zorblat": []}


def test_add_list_remove(conn: sqlite3.Connection) -> None:
    assert synonyms.add(conn, "K8s", ["Kubernetes", "kube", "kube"]) == 2
    group = next(g for g in synonyms.groups(conn) if g["term"] == "k8s")
    assert group == {"term": "k8s", "synonyms": ["kubernetes", "kube"], "source": "user"}
    assert synonyms.remove(conn, "k8s", ["kube"]) == 1
    assert synonyms.remove(conn, "k8s") == 1
    assert not [g for g in synonyms.groups(conn) if g["term"] == "k8s"]


def test_import_plain_and_json(conn: sqlite3.Connection, tmp_path: Path) -> None:
    plain = tmp_path / "team.txt"
    plain.write_text("# ours\npostgres: postgresql, pg\nk8s = kubernetes\n\n")
    assert synonyms.import_file(conn, plain) == 3
    as_json = tmp_path / "more.json"
    as_json.write_text('{"jq": ["jquery-like", "json query"]}')
    assert synonyms.import_file(conn, as_json) == 2
    assert _expanded(conn, "pg") == {"pg": ["postgres", "postgresql"]}


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("just words here\n", r"team.txt, line 1: expected 'term: synonym, synonym'"),
        ("ok: fine\n: nothing\n", r"team.txt, line 2"),
        ("{not json", r"team.txt: not valid JSON at line 1"),
    ],
)
def test_bad_synonym_files_name_the_line(
    conn: sqlite3.Connection, tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "team.txt"
    path.write_text(content)
    with pytest.raises(InvalidParameter, match=message):
        synonyms.import_file(conn, path)
    assert conn.execute("SELECT count(*) FROM synonyms WHERE source = 'team.txt'").fetchone()[0] == 0


def test_a_word_without_letters_is_refused(conn: sqlite3.Connection) -> None:
    with pytest.raises(InvalidParameter, match=r"SYNONYM '\?\?' has no letters or digits"):
        synonyms.add(conn, "x", ["??"])


def test_a_bad_line_imports_nothing(conn: sqlite3.Connection, tmp_path: Path) -> None:
    path = tmp_path / "team.txt"
    path.write_text("alpha: beta\ngamma: ???\n")
    with pytest.raises(
        InvalidParameter, match=r"team.txt, line 2: SYNONYM '\?\?\?' has no letters or digits"
    ):
        synonyms.import_file(conn, path)
    assert not [g for g in synonyms.groups(conn) if g["term"] == "alpha"]


def test_list_and_import_round_trip_words_with_hashes(conn: sqlite3.Connection, tmp_path: Path) -> None:
    from memdex.doors.render import synonyms_text

    synonyms.add(conn, "c#", ["csharp", "dotnet"])
    exported = tmp_path / "all.txt"
    exported.write_text(
        synonyms_text(synonyms.groups(conn)) + "\n# a comment\nf#: fsharp  # trailing comment\n"
    )
    fresh = db.connect(tmp_path / "fresh.db")
    synonyms.import_file(fresh, exported)
    by_term = {g["term"]: g["synonyms"] for g in synonyms.groups(fresh)}
    assert by_term["c#"] == ["csharp", "dotnet"] and by_term["f#"] == ["fsharp"]
    assert len(synonyms.groups(fresh)) == len(synonyms.groups(conn)) + 1
