"""The synonym table: lookup for query expansion, and the edits behind ``memdex synonyms``.

A group is a term and its synonyms. Lookup goes both ways and compares tokens (stems,
``memdex.tokens``), so "Chatty" reaches the group of "chatgpt" (and expands to chatgpt and
gpt), and "problems" reaches "problem". The plain file format (``memdex synonyms import``/
``list``) is one group a line::

    # comments and blank lines are ignored
    chatgpt: chatty, gpt
    k8s = kubernetes, kube

A JSON object ``{"chatgpt": ["chatty", "gpt"]}`` is read too.
"""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path
from typing import Any

from memdex.errors import InvalidParameter
from memdex.query.terms import Term, tokens
from memdex.store import db
from memdex.tokens import phrase
from memdex.tokens import tokens as index_tokens

_SEPARATOR = re.compile(r"\s*(?::|=|->|\t)\s*")
_COMMENT = re.compile(r"(?:^|\s)#.*$")


def expand(conn: sqlite3.Connection, terms: list[Term]) -> list[Term]:
    """Fill ``synonyms`` of each term; adjacent words that form a multi-word synonym merge.

    Returns the (possibly merged) list of terms.
    """
    # What the table says of each word is kept with the connection while the index is
    # unchanged: a batch of questions asks about the same words again (issue 16).
    known = db.memo(conn, "synonyms")
    if _has_phrases(conn, known):
        terms = _merge_phrases(conn, terms, known)
    for term in terms:
        members = _group_members(conn, term.tokens, known)
        # a member that is the same tokens as the term ("problem" for "problems") adds nothing
        seen = {tuple(index_tokens(" ".join(term.tokens)))}
        for member in members:
            toks = tokens(member)
            key = tuple(index_tokens(" ".join(toks)))
            if toks and key not in seen:
                seen.add(key)
                term.synonyms.append(Term(text=member, tokens=toks))
    return terms


def _has_phrases(conn: sqlite3.Connection, known: dict[Any, Any]) -> bool:
    if "has phrases" not in known:
        row = conn.execute(
            "SELECT 1 FROM synonyms WHERE instr(term, ' ') OR instr(synonym, ' ') LIMIT 1"
        ).fetchone()
        known["has phrases"] = row is not None
    return bool(known["has phrases"])


def _merge_phrases(conn: sqlite3.Connection, terms: list[Term], known: dict[Any, Any]) -> list[Term]:
    out: list[Term] = []
    i = 0
    while i < len(terms):
        if i + 1 < len(terms) and not terms[i].stop and not terms[i + 1].stop:
            pair = terms[i].tokens + terms[i + 1].tokens
            if _heads(conn, pair, known):
                out.append(Term(text=f"{terms[i].text} {terms[i + 1].text}", tokens=pair))
                i += 2
                continue
        out.append(terms[i])
        i += 1
    return out


def _heads(conn: sqlite3.Connection, toks: list[str], known: dict[Any, Any]) -> list[str]:
    "Terms of the groups this word (or phrase) belongs to, compared after stemming."
    key = ("heads", *toks)
    if key not in known:
        wanted = index_tokens(" ".join(toks))
        heads: list[str] = []
        for name, column in (("synonyms_match_term", 0), ("synonyms_match_synonym", 1)):
            for row in conn.execute(db.query(name), {"phrase": phrase(toks)}):
                # The FTS match is a prefix (^): the whole entry must be as long as the phrase.
                if len(index_tokens(row[column])) == len(wanted) and row[0] not in heads:
                    heads.append(row[0])
        known[key] = heads
    return list(known[key])


def _group_members(conn: sqlite3.Connection, toks: list[str], known: dict[Any, Any]) -> list[str]:
    key = ("members", *toks)
    if key not in known:
        members: list[str] = []
        for head in _heads(conn, toks, known):
            for word in [head, *(r[0] for r in conn.execute(db.query("synonym_group"), {"term": head}))]:
                if word not in members:
                    members.append(word)
        known[key] = members
    return list(known[key])


def groups(conn: sqlite3.Connection) -> list[dict[str, object]]:
    "Every group: term, synonyms, and where they came from."
    return [
        {"term": r["term"], "synonyms": json.loads(r["synonyms"]), "source": r["sources"]}
        for r in conn.execute(db.query("synonyms_all"))
    ]


def add(conn: sqlite3.Connection, term: str, synonyms: list[str], source: str = "user") -> int:
    "Add synonyms to a term's group (creating it); returns how many were new."
    group = _group(term, synonyms)
    with db.transaction(conn):
        return _insert(conn, *group, source)


def _group(term: str, synonyms: list[str]) -> tuple[str, list[str]]:
    "A group with every word checked, before anything is written."
    cleaned = _clean(term, "TERM")
    return cleaned, [w for w in (_clean(s, "SYNONYM") for s in synonyms) if w != cleaned]


def _insert(conn: sqlite3.Connection, term: str, synonyms: list[str], source: str) -> int:
    added = 0
    for synonym in synonyms:
        cursor = conn.execute(
            db.query("synonym_insert"), {"term": term, "synonym": synonym, "source": source}
        )
        added += cursor.rowcount
    return added


def remove(conn: sqlite3.Connection, term: str, synonyms: list[str] | None = None) -> int:
    "Remove some synonyms of a term, or its whole group; returns how many rows went."
    term = _clean(term, "TERM")
    with db.transaction(conn):
        if not synonyms:
            return conn.execute(db.query("synonym_group_delete"), {"term": term}).rowcount
        return sum(
            conn.execute(db.query("synonym_delete"), {"term": term, "synonym": _clean(s, "SYNONYM")}).rowcount
            for s in synonyms
        )


def _clean(word: str, name: str) -> str:
    cleaned = " ".join(word.split()).casefold()
    if not tokens(cleaned):
        raise InvalidParameter(f"{name} {word!r} has no letters or digits to search for.")
    return cleaned


def parse_file(path: Path) -> list[tuple[str, list[str]]]:
    "Read a synonym file (plain lines or a JSON object); errors name the file and line."
    try:
        text = path.read_text("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidParameter(f"Cannot read synonym file {path}: {exc}") from exc
    if path.suffix.lower() == ".json" or text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise InvalidParameter(f"{path}: not valid JSON at line {exc.lineno}: {exc.msg}") from exc
        if not isinstance(data, dict):
            raise InvalidParameter(f"{path}: expected a JSON object of term -> list of synonyms.")
        return [
            _group(str(k), [str(v) for v in (vs if isinstance(vs, list) else [vs])]) for k, vs in data.items()
        ]
    out = []
    for number, line in enumerate(text.splitlines(), 1):
        line = _COMMENT.sub("", line).strip()  # "# note" and "x  # note", but not "c#"
        if not line:
            continue
        parts = _SEPARATOR.split(line, maxsplit=1)
        if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
            raise InvalidParameter(f"{path}, line {number}: expected 'term: synonym, synonym', got {line!r}.")
        try:
            out.append(_group(parts[0], [w.strip() for w in parts[1].split(",") if w.strip()]))
        except InvalidParameter as exc:
            raise InvalidParameter(f"{path}, line {number}: {exc}") from None
    return out


def import_file(conn: sqlite3.Connection, path: Path) -> int:
    "Add every group of a synonym file, all or nothing; returns how many synonyms were new."
    groups = parse_file(path)  # every line checked before anything is written
    with db.transaction(conn):
        return sum(_insert(conn, term, words, path.name) for term, words in groups)
