"""The house rules of docs/architecture.md, checked: rooms, no import cycles, one home for
ranking weights."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import memdex
from memdex.query import ranking
from memdex.query.options import OPTIONS
from memdex.query.request import Filters, SearchRequest

PACKAGE = Path(memdex.__file__).parent
REPO = PACKAGE.parent
ROOMS = {"store", "ingest", "watch", "query", "passages", "answer", "serena", "serve", "agents", "doors"}
TOP_LEVEL = {"__init__", "__main__", "errors", "models", "tokens", "utils"}  # shared by every room


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _top_level_imports(path: Path, name: str) -> set[str]:
    "memdex modules imported when the module loads (not inside functions, not for typing only)."
    found: set[str] = set()
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        for sub in [node] if not isinstance(node, ast.Try) else node.body:
            if isinstance(sub, ast.ImportFrom) and sub.module and sub.module.startswith("memdex"):
                found.add(sub.module)
                found.update(f"{sub.module}.{a.name}" for a in sub.names)
            elif isinstance(sub, ast.Import):
                found.update(a.name for a in sub.names if a.name.startswith("memdex"))
    return found


def test_every_module_lives_in_a_room() -> None:
    strays = [
        name for name in _modules() if name.count(".") == 1 and name.split(".")[1] not in ROOMS | TOP_LEVEL
    ]
    assert strays == []


def test_no_import_cycles() -> None:
    "Previously query/results.py and the cascade imported each other (issue 13)."
    modules = _modules()
    graph = {
        name: {m for m in _top_level_imports(path, name) if m in modules and m != name}
        for name, path in modules.items()
    }
    # a package's __init__ importing its own submodule is not a cycle worth reporting
    cycles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph[node]):
            if node.startswith(nxt + "."):
                continue  # a module's own package is loaded before it anyway
            if state.get(nxt) == 1:
                cycles.append(stack[stack.index(nxt) :] + [nxt])
            elif nxt not in state:
                visit(nxt, [*stack, nxt])
        state[node] = 2

    for name in sorted(graph):
        if name not in state:
            visit(name, [name])
    assert cycles == []


def test_bm25_weights_have_one_home() -> None:
    "The layer queries bind the weights; Datasette's canned copies repeat them exactly."
    for name in ("layer_topics", "layer_content"):
        sql = (REPO / "schema" / "queries" / f"{name}.sql").read_text()
        assert re.search(r"bm25\(\w+, :w_", sql), name
    topics = ", ".join(f"{w:.1f}" for w in ranking.TOPIC_COLUMNS.values())
    content = ", ".join(f"{w:.1f}" for w in ranking.CONTENT_COLUMNS.values())
    for path in sorted((REPO / "schema" / "datasette").glob("layer_*.sql")):
        sql = path.read_text()
        expected = topics if "documents_fts" in sql else content
        assert f"bm25({'documents_fts' if 'documents_fts' in sql else 'chunks_fts'}, {expected})" in sql, (
            path.name
        )


def test_no_weight_is_declared_outside_ranking() -> None:
    """Names that end in _WEIGHT in the rooms that rank results (query, answer) are ranking
    weights: they live in query/ranking.py only. (serena/keywords.py weighs words to suggest
    an index row's keywords; that ranks no result.)"""
    declared = {
        path.relative_to(REPO).as_posix()
        for room in ("query", "passages", "answer")
        for path in (PACKAGE / room).rglob("*.py")
        if re.search(r"^[A-Z_]*WEIGHTS? = ", path.read_text(), re.M)
    }
    assert declared == {"memdex/query/ranking.py"}


def test_every_request_field_has_an_option_name() -> None:
    "Every door takes every field of a SearchRequest and of its Filters: the option table has each."
    named = {o.name for o in OPTIONS}
    assert set(SearchRequest.__dataclass_fields__) - {"query", "filters"} <= named
    assert set(Filters.__dataclass_fields__) <= named
