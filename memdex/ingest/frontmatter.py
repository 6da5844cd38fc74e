"""The YAML of a frontmatter block, read by libyaml, bounded against hostile YAML.

PyYAML's pure-Python loader took three quarters of an index of memories with rich
frontmatter; libyaml (``yaml.CSafeLoader``, in PyYAML's wheels) reads the same YAML seven
times faster. Three rules hold whichever reads it:

- a date which is no date (``2025-09-42``) stays the text it is;
- nesting too deep, or aliases that expand past ``MAX_META_VALUES`` values, refuse the file
  (``IngestError``) instead of expanding it ("billion laughs");
- a broken block is reported in PyYAML's words, which say where it breaks.

``fields`` builds the JSON values of a block straight from libyaml's nodes, one walk, with
the same bounds and results as ``jsonable`` over PyYAML's objects; any node it does not take
(a merge key, a key given twice, a tag of its own, a bound reached) sends the block the whole
way, PyYAML's constructor and then ``jsonable``, so every result is theirs.
"""

from __future__ import annotations

from datetime import date, datetime
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

from memdex.errors import IngestError

MAX_META_VALUES = 10_000
MAX_META_DEPTH = 32


class _Loader(yaml.CSafeLoader):
    "libyaml's SafeLoader, except that a date which is no date (2025-09-42) stays the text it is."

    # With no path resolvers (SafeLoader has none) a scalar's tag follows from its text alone;
    # libyaml asks once per node, and frontmatter repeats its keys and many of its values.
    _tags: dict[tuple[str, tuple[bool, bool]], str] = {}

    def resolve(self, kind: type[Node], value: Any, implicit: Any) -> str:
        if kind is not ScalarNode:
            return super().resolve(kind, value, implicit)
        key = (value, implicit)
        tag = self._tags.get(key)
        if tag is None:
            if len(self._tags) >= 20_000:
                self._tags.clear()
            tag = self._tags[key] = super().resolve(kind, value, implicit)
        return tag


class _PyLoader(yaml.SafeLoader):
    """The same in pure Python: for a block libyaml might nest too deeply for the C stack, and
    for the words of a YAML error (the reason a broken file is reported with)."""


def _timestamp(loader: Any, node: ScalarNode) -> Any:  # either loader
    try:
        return loader.construct_yaml_timestamp(node)
    except ValueError:  # one typo in a date must not cost the whole memory
        return loader.construct_scalar(node)


for _loader in (_Loader, _PyLoader):
    _loader.add_constructor("tag:yaml.org,2002:timestamp", _timestamp)

# libyaml composes nested collections by C recursion: nested some ten thousand deep, they
# overflow the C stack (a crash, not an exception). Every level of nesting needs one of these
# characters, so a block with at most C_NESTING_BOUND of them is safe to hand to libyaml; any
# other goes to the Python loader, whose RecursionError is a reported file.
_NESTING_MARKS = "[{-?:"
C_NESTING_BOUND = 1000


def _c_safe(block: str) -> bool:
    return sum(block.count(mark) for mark in _NESTING_MARKS) <= C_NESTING_BOUND


def load(block: str) -> Any:
    "The block as PyYAML's SafeLoader builds it (dates kept as text when they are none)."
    if _c_safe(block):
        try:
            return yaml.load(block, Loader=_Loader)
        except Exception:  # a YAML error, or a constructor's own (!!int on a word)
            pass  # read again below, for PyYAML's message (or its reading, if it has one)
    return yaml.load(block, Loader=_PyLoader)


def fields(block: str) -> Any:
    """The block as JSON values: a mapping's values as ``jsonable`` makes them, bounded the same;
    anything else as ``load`` gives it (it is no fields)."""
    if _c_safe(block):
        loader = _Loader(block)
        try:
            node = loader.get_single_node()
            if isinstance(node, MappingNode) and node.tag == _MAP:
                try:
                    return _quick(loader, node, 0, [MAX_META_VALUES])
                except _Unusual:
                    pass
            value = loader.construct_document(node) if node is not None else None
            return jsonable(value) if isinstance(value, dict) else value
        except IngestError:
            raise
        except Exception:  # a YAML error, or a constructor's own (!!int on a word)
            pass  # read again below, for PyYAML's message (or its reading, if it has one)
        finally:
            loader.dispose()
    value = yaml.load(block, Loader=_PyLoader)
    return jsonable(value) if isinstance(value, dict) else value


class _Unusual(Exception):
    "A node ``_quick`` leaves to PyYAML's constructor."


_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
# The scalars of plain frontmatter, built by the loader's own constructors.
_SCALARS = {
    tag: _Loader.yaml_constructors[tag]
    for tag in (f"tag:yaml.org,2002:{name}" for name in ("str", "null", "bool", "int", "float", "timestamp"))
}


def _quick(loader: _Loader, node: Node, depth: int, budget: list[int]) -> Any:
    "``jsonable(loader.construct_object(node))`` for the nodes of plain frontmatter."
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_META_DEPTH:
        raise _Unusual  # the whole way says what is wrong: a broken node, or too much
    kind = node.__class__
    if kind is ScalarNode:
        if node.tag == _STR:  # the most of them: construct_yaml_str is the node's text
            return node.value
        construct = _SCALARS.get(node.tag)
        if construct is None:
            raise _Unusual
        value = construct(loader, node)
        return as_text(value) if isinstance(value, date) else value
    if kind is MappingNode and node.tag == _MAP:
        pairs = {}
        for key_node, value_node in node.value:
            if key_node.__class__ is not ScalarNode:  # a collection as a key
                raise _Unusual
            if key_node.tag == _STR:
                pairs[key_node.value] = value_node
                continue
            construct = _SCALARS.get(key_node.tag)
            if construct is None:  # a merge key (<<), a tag of its own
                raise _Unusual
            pairs[construct(loader, key_node)] = value_node
        if len(pairs) != len(node.value):  # a key given twice (or 1 and true, which are equal)
            raise _Unusual
        return {str(k): _quick(loader, v, depth + 1, budget) for k, v in pairs.items()}
    if kind is SequenceNode and node.tag == _SEQ:
        return [_quick(loader, v, depth + 1, budget) for v in node.value]
    raise _Unusual


def jsonable(value: Any) -> Any:
    """Frontmatter as JSON: dates become ISO strings, anything else odd becomes a string.

    YAML aliases let a few hundred bytes stand for billions of values ("billion laughs"), and
    nesting can go deeper than Python recurses: past MAX_META_VALUES values or MAX_META_DEPTH
    levels the file is refused, not expanded.
    """
    budget = [MAX_META_VALUES]

    def convert(item: Any, depth: int) -> Any:
        budget[0] -= 1
        if budget[0] < 0 or depth > MAX_META_DEPTH:
            raise IngestError(
                f"frontmatter expands to more than {MAX_META_VALUES:,} values or {MAX_META_DEPTH} "
                "levels (YAML aliases?); not indexed"
            )
        if isinstance(item, dict):
            return {str(k): convert(v, depth + 1) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [convert(v, depth + 1) for v in item]
        if isinstance(item, (date, datetime)):
            return as_text(item)
        if item is None or isinstance(item, (str, int, float, bool)):
            return item
        return str(item)

    return convert(value, 0)


def as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value.isoformat().replace("+00:00", "Z")
    if isinstance(value, date):
        return value.isoformat()
    text = str(value).strip()
    return text or None
