"""The installed package carries its SQL and sample corpus (sqlite-utils 4.2 shipped without a
dependency; this catches the same class of mistake): build the wheel, run from it alone."""

import json
import sqlite3
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Slow as a whole (see docs/development.md): the quick check leaves it out.
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    "The wheel `pip wheel .` builds, once for the module (the model makes it 54 MB)."
    folder = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(folder), str(REPO)],
        check=True,
        capture_output=True,
    )
    (built,) = folder.glob("memdex-*.whl")
    return built


def test_wheel_contains_schema_and_sample_and_runs_the_demo(wheel: Path, tmp_path: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    migrations = {p.name for p in (REPO / "schema" / "migrations").glob("*.sql")}
    queries = {p.name for p in (REPO / "schema" / "queries").glob("*.sql")}
    assert {f"memdex/schema/migrations/{m}" for m in migrations} <= names
    assert {f"memdex/schema/queries/{q}" for q in queries} <= names
    assert "memdex/sample-corpus/serena/memory-index.md" in names
    assert "memdex/py.typed" in names
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    # Only the wheel's memdex is importable: the repository is not on the path.
    env = {"PYTHONPATH": str(unpacked), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    out = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "import site; [sys.path.append(p) for p in site.getsitepackages()]; "
            "import memdex.doors.cli; sys.argv = ['memdex', 'demo']; memdex.doors.cli.main()",
            str(unpacked),
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
    )
    assert out.returncode == 0, out.stderr
    assert str(unpacked / "memdex" / "sample-corpus") in out.stdout
    assert "19 documents written" in out.stdout


def test_from_the_wheel_alone_a_paraphrase_is_found_by_meaning_offline(wheel: Path, tmp_path: Path) -> None:
    """`pip install memdex` searches by meaning with no network and no flag: the model is in the
    wheel, and `memdex index` embeds with it, with an empty home and cache, no hub."""
    names = set(zipfile.ZipFile(wheel).namelist())
    packed = REPO / "memdex" / "models" / "all-MiniLM-L6-v2-int8"
    assert {
        f"memdex/models/all-MiniLM-L6-v2-int8/{p.relative_to(packed)}"
        for p in packed.rglob("*")
        if p.is_file()
    } <= names
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "garden.md").write_text(
        "# Tomatoes\n\nWater the tomato beds at dawn and stake the tall plants.\n"
    )
    (notes / "money.md").write_text("# Budget\n\nThe quarterly budget review moved to the first Monday.\n")
    home, cache = tmp_path / "home", tmp_path / "cache"
    home.mkdir()
    cache.mkdir()
    offline = {"HF_HUB_OFFLINE": "1", "HTTPS_PROXY": "http://127.0.0.1:9", "HTTP_PROXY": "http://127.0.0.1:9"}
    env = {"PATH": "/usr/bin:/bin", "HOME": str(home), "XDG_CACHE_HOME": str(cache), **offline}
    env |= {"XDG_DATA_HOME": str(tmp_path / "data"), "MEMDEX_NO_SERVER": "1"}

    def memdex(*args: str) -> str:
        "memdex from the wheel's files (the repository is not on the path), its dependencies from this venv"
        run = (
            "import sys; sys.path.insert(0, sys.argv[1]); "
            "import site; [sys.path.append(p) for p in site.getsitepackages()]; "
            "from memdex.doors.main import main; sys.argv = ['memdex', *sys.argv[2:]]; main()"
        )
        done = subprocess.run(
            [sys.executable, "-I", "-c", run, str(unpacked), "--db", str(tmp_path / "notes.db"), *args],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        return done.stdout

    from memdex.query.meaning.model import load_spec, packaged_path

    report = json.loads(memdex("index", str(notes), "--json"))["semantic"]  # words, then vectors
    assert report["model"].startswith(load_spec(packaged_path()).name + "@") and report["embedded"] == 2
    found = json.loads(memdex("search", "when should vegetables get watered", "--json"))
    assert found["semantic"]["used"] is True
    assert found["results"][0]["path"].endswith("garden.md")
    with sqlite3.connect(tmp_path / "notes.db") as conn:  # the model's files: the wheel's own
        (source,) = conn.execute("SELECT source FROM embedding_models").fetchone()
    assert source == str(unpacked / "memdex" / "models" / "all-MiniLM-L6-v2-int8")
    assert not list(home.rglob("*"))  # nothing written in the home folder; the cache holds speed copies only
