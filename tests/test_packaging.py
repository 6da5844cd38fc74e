"""The installed package carries its SQL and sample corpus (sqlite-utils 4.2 shipped without a
dependency; this catches the same class of mistake): build the wheel, run from it alone."""

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

# Slow as a whole (see docs/development.md): the quick check leaves it out.
pytestmark = pytest.mark.slow


def test_wheel_contains_schema_and_sample_and_runs_the_demo(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-w", str(tmp_path), str(REPO)],
        check=True,
        capture_output=True,
    )
    (wheel,) = tmp_path.glob("memdex-*.whl")
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
