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
ROOMS = {"store", "ingest", "watch", "query", "answer", "serena", "agents", "doors"}
TOP_LEVEL = {"__init__", "__main__", "errors", "models", "secrets", "tokens", "utils"}  # shared by every room


def _modules() -> dict[str, Path]:
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def _imports(path: Path, name: str, modules: dict[str, Path]) -> set[str]:
    """Every memdex module this one imports, wherever the import sits: at the top, inside a
    function, under TYPE_CHECKING, relative or absolute (a name imported from a package that
    is a module of its own counts as that module)."""
    found: set[str] = set()
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parent, *([node.module] if node.module else [])])
            if base.startswith("memdex"):
                for alias in node.names:
                    found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("memdex"))
    return {m for m in found if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(path, name, modules) for name, path in modules.items()}


# The rooms, lowest first, as docs/architecture.md writes them: a module imports only from
# its own room and those below it. "shared" is the top-level modules (and the package itself).
ORDER_LINE = re.compile(r"^Rooms, lowest first: (.+)$", re.M)


def _room_order() -> list[str]:
    found = ORDER_LINE.search((REPO / "docs" / "architecture.md").read_text())
    assert found, "docs/architecture.md names the rooms in order"
    return [r.strip(" `.") for r in found.group(1).split("→")]


def _room(module: str) -> str:
    parts = module.split(".")
    if parts[1:] == ["__main__"]:
        return "doors"  # python -m memdex: the command's door
    return "shared" if len(parts) == 1 or parts[1] in TOP_LEVEL else parts[1]


def test_every_module_lives_in_a_room() -> None:
    strays = [
        name for name in _modules() if name.count(".") == 1 and name.split(".")[1] not in ROOMS | TOP_LEVEL
    ]
    assert strays == []
    assert set(_room_order()) == ROOMS | {"shared"}


def test_imports_run_one_way() -> None:
    """No module imports from a room above its own, counting every import in the tree (issue 36:
    previously store imported watch and serve, ingest imported query, serve the doors, and
    159 imports inside functions went unchecked)."""
    order = {room: n for n, room in enumerate(_room_order())}
    upward = [
        f"{a} -> {b}"
        for a, targets in sorted(_graph().items())
        for b in sorted(targets)
        if order[_room(b)] > order[_room(a)]
    ]
    assert upward == []


def test_no_import_cycles() -> None:
    "Previously query/results.py and the cascade imported each other (issue 13); every import counts."
    graph = _graph()
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
        for room in ("query", "answer")
        for path in (PACKAGE / room).rglob("*.py")
        if re.search(r"^[A-Z_]*WEIGHTS? = ", path.read_text(), re.M)
    }
    assert declared == {"memdex/query/ranking.py"}


def test_every_request_field_has_an_option_name() -> None:
    "Every door takes every field of a SearchRequest and of its Filters: the option table has each."
    named = {o.name for o in OPTIONS}
    assert set(SearchRequest.__dataclass_fields__) - {"query", "filters"} <= named
    assert set(Filters.__dataclass_fields__) <= named
