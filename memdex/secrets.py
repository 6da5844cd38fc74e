"""Secrets masked before they reach the index: API keys, tokens, private keys, passwords.

Agents' session logs hold what passed through a shell or a pasted config. Every text ingest
writes (a document's title, description, tags, topics and metadata, each chunk's heading and
text) goes through :func:`mask` first (``ingest.writer``), so the full-text tables, the stored
text, snippets, ``memdex show``, an agent's context and the vectors made from it never hold
the value; in its place stands a marker, ``[secret:aws-access-key]``, whose words are
searchable as a kind of secret. A root indexed with ``--keep-secrets`` is not masked.

The rules are well-known formats, each anchored on what its issuer puts in every token (a
prefix, a header, a keyword before it), not on how random a string looks: an entropy test
masks git SHAs, UUIDs, hashes and base64 images, which sessions are full of. What each rule
caught, and wrongly caught, on the real logs in shared/data is in docs/secrets.md
(``scripts/bench_secrets.py``). A rule runs only where one of its anchors is found (a
substring search in C), so a text with none costs one scan an anchor and no regex.

``IDENTITY`` names the rules; the ``secret_rules`` table records the identity an index was
masked with, and ``store.db.migrate`` masks the stored text again, once, when it differs.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from functools import cache
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from memdex.models import Document

# Bumped whenever a rule masks something it did not (or stops masking something): indexes
# masked with other rules are masked again, once, by store.db.migrate.
VERSION = 2
IDENTITY = f"memdex-secrets {VERSION}"

_B64 = r"[A-Za-z0-9+/=]"
_KEY_NAME = r"[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?"
# Lines of a key's body: base64 runs of 16 or more, each after a line break (or the two
# characters \n of a string escaped inside a log: a tool's JSON output). Every quantifier is
# possessive, so a long run of base64 (an image) costs one pass, never a backtrack.
_BREAK = r"(?:[ \t]*(?:\r?\n|\\r?\\n)[ \t]*)"
_BODY = rf"(?:{_BREAK}?+{_B64}{{16,}}+)++"


class Rule(NamedTuple):
    """One kind of secret: its pattern and its anchors, the substrings every match holds.

    A rule runs only where an anchor is found (``str.find``, in C): its pattern is searched
    in a window from ``before`` characters before the anchor to ``after`` past it. Python's
    ``re`` would otherwise try a pattern at every position of every text; anchored, a text
    with no anchor costs one substring scan a rule. With ``fold`` the anchors are looked for
    in the text lowercased. A pattern with a group named ``secret`` masks that group alone
    (``password=`` stays, its value goes); with ``plausible`` the value must also look made
    by a machine (``_plausible``). A NamedTuple, not a dataclass: every command imports this
    module (store.db), and ``dataclasses`` costs an import of its own."""

    kind: str
    pattern: str  # compiled on first use (``_by_anchor``): importing this module compiles nothing
    anchors: tuple[str, ...]
    before: int = 0
    after: int = 512
    fold: bool = False
    plausible: bool = False


def _rule(kind: str, pattern: str, anchors: Iterable[str], **how: Any) -> Rule:
    return Rule(kind, pattern, tuple(anchors), **how)


_NEAR = 64  # a window reaching further back than this has its own search (_found)
_PEM_MAX = 20000  # characters of a PEM block (a 16384-bit RSA key is about 12,000)

RULES: tuple[Rule, ...] = (
    # A PEM block, header to footer; a block cut short (a truncated tool output, a chunk
    # that ends inside it) to the end of its body; a body whose header is in the chunk before.
    _rule(
        "private-key",
        # the body's characters, a dash only where it starts no "-----": possessive, so a match
        # runs to the next "-----" once (a lazy run tried the footer at every character: 500
        # headers in a row took 10 s)
        rf"-----BEGIN {_KEY_NAME}-----(?:(?:[\sA-Za-z0-9+/=:,.\\]|-(?!----)){{0,{_PEM_MAX}}}+"
        rf"-----END {_KEY_NAME}-----|{_BODY})?+",
        ["PRIVATE KEY"],
        before=40,
        after=_PEM_MAX + 100,
    ),
    _rule(
        "private-key",
        rf"(?<![A-Za-z0-9+/=]){_BODY}{_BREAK}?+-----END {_KEY_NAME}-----",
        ["PRIVATE KEY"],
        before=_PEM_MAX,
        after=40,
    ),
    _rule(
        "aws-access-key",
        r"\b(?:AKIA|ASIA)[A-Z0-9]{16}\b",
        ["AKIA", "ASIA"],
    ),
    # matched where "aws" starts (aws_secret_access_key, AWS_SESSION_TOKEN): a scan of its own,
    # but no window searched around every "secret" (a megabyte of "aws_secret=" took 7 s)
    _rule(
        "aws-secret-key",
        r"(?i:aws[\w.-]{0,20}?(?:secret|session)[\w.-]{0,20}+)[\"']?[ \t]*+[:=][ \t]*+[\"']?"
        r"(?P<secret>[A-Za-z0-9/+=]{40,}+)",
        ["aws"],
        fold=True,
        after=2048,
    ),
    _rule(
        "github-token",
        r"\b(?:gh[pos]_[A-Za-z0-9]{36,251}|github_pat_[A-Za-z0-9_]{22,255})\b",
        ["ghp_", "gho_", "ghs_", "github_pat_"],
    ),
    _rule("gitlab-token", r"\bglpat-[A-Za-z0-9_-]{20,}", ["glpat-"]),
    _rule("slack-token", r"\bxox[abposre]-[A-Za-z0-9-]{10,}", ["xox"]),
    _rule(
        "slack-webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{20,}",
        ["://"],  # the URL rule's anchor: no scan of its own
        before=5,
    ),
    _rule("stripe-key", r"\b[sr]k_live_[A-Za-z0-9]{16,}", ["k_live_"], before=1),
    _rule("anthropic-key", r"\bsk-ant-[a-z]+\d*-[A-Za-z0-9_-]{32,}", ["sk-"], after=300),
    _rule(
        "openai-key",
        r"\bsk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{20,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20})",
        ["sk-"],
        after=300,
    ),
    _rule("google-api-key", r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])", ["AIza"]),
    _rule("huggingface-token", r"\bhf_[A-Za-z0-9]{34,}\b", ["hf_"]),
    _rule("npm-token", r"\bnpm_[A-Za-z0-9]{36}\b", ["npm_"]),
    _rule("pypi-token", r"\bpypi-AgE[A-Za-z0-9_-]{50,}", ["pypi-AgE"]),
    _rule("sendgrid-key", r"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b", ["SG."]),
    _rule("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{16,}", ["eyJ"], after=8192),
    # user:password@host in a URL: the password alone.
    _rule(
        "url-password",
        r"://[^\s:/@'\"<>]{1,64}:(?P<secret>[^\s:/@'\"<>]{3,128})@",
        ["://"],
        after=200,
        plausible=True,
    ),
    _rule(
        "bearer-token",
        r"(?i:bearer)\s+(?P<secret>[A-Za-z0-9._~+/-]{20,}=*)",
        ["bearer"],
        fold=True,
        plausible=True,
    ),
    # password=..., "api_key": "...", export GITHUB_TOKEN=...: the value, when it looks made by a
    # machine (see _plausible): a variable, a placeholder or a word is kept. Matched from the
    # word's end, so access_token, client_secret and DB_PASSWORD are all found.
    _rule(
        "password",
        r"(?i:pass(?:word|wd|phrase)?|secret|token|"
        r"(?:(?<=api)|(?<=api[_-])|(?<=access[_-])|(?<=private[_-])|(?<=secret[_-]))key)"
        r"[\w.-]{0,30}+[\"']?[ \t]*+(?::|=|:=)[ \t]*+[\"']?(?P<secret>[^\s\"'`,;)]{8,200}+)",
        ["pass", "secret", "key", "token"],
        after=300,
        fold=True,
        plausible=True,
    ),
)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


_PLACEHOLDER = (
    r"^(?:\$|%|<|\{|\[|\*|#|\.\.|os\.|process\.|env\.|self\.|this\.|getenv|settings\.|config\.)"
    r"|(?i:example|your|placeholder|changeme|redacted|dummy|xxxx|\*\*\*|secret:|password|token|"
    r"undefined|null|none|true|false)"
)
_HEX = r"^(?:[0-9a-f]{7,}|[0-9A-F]{7,})$"


def _plausible(value: str) -> bool:
    """Does a value after ``password=`` look like a secret rather than a variable, a word or a
    placeholder? Letters and digits mixed, few repeats, none of the usual placeholders. Pure
    hex (a commit, a hash) is a secret only where a format rule says so."""
    if re.search(_PLACEHOLDER, value) or re.match(_HEX, value):  # compiled once, by re's cache
        return False
    if not (any(c.isdigit() for c in value) and any(c.isalpha() for c in value)):
        return False
    if "(" in value or value.count(".") > 2 or "/" in value[:1]:
        return False  # a call, an attribute path, a file path
    return len(value) >= 8 and _entropy(value) >= 3.0


class Masked:
    "A text with its secrets masked: the new text, what was masked, and where (to move offsets)."

    __slots__ = ("edits", "kinds", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.kinds: Counter[str] = Counter()
        # (start, end, length of the replacement, kind) in the original text, in order
        self.edits: list[tuple[int, int, int, str]] = []

    def __repr__(self) -> str:
        return f"Masked({self.text!r}, kinds={dict(self.kinds)})"

    def position(self, offset: int) -> int:
        "Where a position of the original text is in the masked one."
        moved = offset
        for start, end, length, _ in self.edits:
            if end <= offset:
                moved += length - (end - start)
            elif start < offset:
                return moved - (offset - start) + min(length, offset - start)
        return moved


@cache
def _by_anchor() -> tuple[tuple[tuple[str, bool], list[tuple[Rule, re.Pattern[str]]]], ...]:
    """Each anchor once, with the rules it starts and their compiled patterns: a text is
    scanned once an anchor. Compiled on the first mask, not on import: every command imports
    this module (store.db), and compiling the rules cost about 10 ms."""
    grouped: dict[tuple[str, bool], list[tuple[Rule, re.Pattern[str]]]] = {}
    for rule in RULES:
        compiled = re.compile(rule.pattern)
        for anchor in rule.anchors:
            grouped.setdefault((anchor, rule.fold), []).append((rule, compiled))
    return tuple(grouped.items())


_ORDER = {rule: n for n, rule in enumerate(RULES)}
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def marker(kind: str) -> str:
    "What stands where a secret was: its words say what kind it was, never its value."
    return f"[secret:{kind}]"


def mask(text: str, keep_lines: bool = False) -> Masked:
    """``text`` with every secret the rules find replaced by its marker. With ``keep_lines``
    a secret over several lines (a private key) leaves as many line breaks, so a file's line
    numbers stay true (``memdex show`` of a file)."""
    spans: list[tuple[int, int, int, str]] = []  # start, end, the rule's place in RULES, kind
    folded: str | None = None
    for (anchor, fold), rules in _by_anchor():
        if fold:
            if folded is None:
                folded = text.lower()
                if len(folded) != len(text):  # a letter that lowercases to two: fold ASCII alone
                    folded = text.translate(_ASCII_LOWER)
            hay = folded
        else:
            hay = text
        first = hay.find(anchor)
        for rule, pattern in rules if first >= 0 else ():
            seen: set[tuple[int, int]] = set()
            at = first
            while at >= 0:
                span = _found(rule, pattern, text, at, seen)
                if span is not None:
                    spans.append((*span, _ORDER[rule], rule.kind))
                at = hay.find(anchor, max(at + 1, span[1] if span else 0))
    if not spans:
        return Masked(text)
    spans.sort(key=lambda s: (s[0], -s[1], s[2]))  # of two rules for one span, the earlier (a format)
    out: list[str] = []
    masked = Masked(text)
    at = 0
    for start, end, _, kind in spans:
        if start < at:
            continue  # inside a secret already masked
        replacement = marker(kind)
        if keep_lines:
            replacement += "\n" * text.count("\n", start, end)
        out += [text[at:start], replacement]
        masked.kinds[kind] += 1
        masked.edits.append((start, end, len(replacement), kind))
        at = end
    out.append(text[at:])
    masked.text = "".join(out)
    return masked


def _found(
    rule: Rule, pattern: re.Pattern[str], text: str, at: int, seen: set[tuple[int, int]]
) -> tuple[int, int] | None:
    """The span to mask of a match of ``rule`` at an anchor found at ``at``: a pattern that
    starts with its anchor (``before`` 0) is matched there, once; any other is searched in
    the window around it."""
    if rule.before == 0:
        found = pattern.match(text, at, at + rule.after)
        matches = [found] if found is not None else []
    elif rule.before > _NEAR:
        # a match that ends at its anchor (a key's body before its footer): only where the
        # footer is right before the anchor, and never reaching back past an earlier "-----"
        # (a body holds none), so a text of footers in a row is scanned once, not once each
        footer = text.rfind("-----", max(0, at - _NEAR), at)
        if footer < 0:
            return None
        earlier = text.rfind("-----", max(0, at - rule.before), footer)
        lo = max(0, at - rule.before, earlier + 5 if earlier >= 0 else 0)
        matches = list(pattern.finditer(text, lo, at + rule.after))
    else:
        matches = list(pattern.finditer(text, max(0, at - rule.before), at + rule.after))
    for m in matches:
        span = m.span("secret") if "secret" in pattern.groupindex else m.span()
        if span in seen or span[0] < 0:
            continue
        if rule.plausible and not _plausible(text[span[0] : span[1]]):
            continue
        seen.add(span)
        return span
    return None


def mask_value(value: Any, kinds: Counter[str]) -> Any:
    "Every string inside a JSON-like value masked (a document's metadata), counted into ``kinds``."
    if isinstance(value, str):
        done = mask(value)
        kinds.update(done.kinds)
        return done.text
    if isinstance(value, list):
        return [mask_value(v, kinds) for v in value]
    if isinstance(value, tuple):
        return tuple(mask_value(v, kinds) for v in value)
    if isinstance(value, dict):
        return {k: _mask_entry(k, v, kinds) for k, v in value.items()}
    return value


def _mask_entry(key: Any, value: Any, kinds: Counter[str]) -> Any:
    """A metadata entry masked with its key in front, as a config line reads: a value is a
    secret by what names it (``db_password: Zq8x...``) as often as by its form."""
    if isinstance(value, str) and isinstance(key, str):
        label = f"{key}: "
        done = mask(label + value)
        if done.edits and done.text.startswith(label):
            kinds.update(done.kinds)
            return done.text[len(label) :]
    return mask_value(value, kinds)


def mask_chunk(heading: str, text: str, meta: dict[str, Any], kinds: Counter[str]) -> tuple[str, str]:
    "A chunk's heading and text masked, its messages' offsets moved to match (in ``meta``)."
    head = mask(heading)
    body = mask(text)
    move_offsets(meta, body)
    kinds.update(head.kinds)
    kinds.update(body.kinds)
    return head.text, body.text


def mask_document(doc: Document) -> Counter[str]:
    """Mask every text of a parsed document in place -- title, description, tags, topics,
    metadata, and each chunk's heading and text -- and say what was masked, by kind.

    All of its texts are scanned first as one, and field by field only when that finds
    something: most documents hold no secret, and a call per field (a chunk's heading, each
    topic) cost more than the scanning (``scripts/bench_secrets.py index``)."""
    kinds: Counter[str] = Counter()
    whole = [doc.title, doc.description, *doc.tags, *(t for t, _ in doc.topics)]
    whole += [json.dumps(doc.meta, ensure_ascii=False, default=str)]
    whole += [part for c in doc.chunks for part in (c.heading, c.text)]
    joined = "\n\n".join(whole)
    found = mask(joined)
    if not found.edits:
        return kinds
    clean = not_secret(joined, found)
    doc.topics = [(topic, source) for topic, source in doc.topics if clean(topic)]
    doc.tags = [tag for tag in doc.tags if not isinstance(tag, str) or clean(tag)]
    doc.title = mask_value(doc.title, kinds)
    doc.description = mask_value(doc.description, kinds)
    doc.tags = mask_value(doc.tags, kinds)
    doc.topics = [(mask_value(topic, kinds), source) for topic, source in doc.topics]
    doc.meta = mask_value(doc.meta, kinds)
    for chunk in doc.chunks:
        chunk.heading, chunk.text = mask_chunk(chunk.heading, chunk.text, chunk.meta, kinds)
    return kinds


def not_secret(text: str, found: Masked | None = None) -> Callable[[str], bool]:
    """Whether a word (a topic, a tag) is no part of a secret in ``text``. Topics are words
    taken from the text before it was masked (a conversation's distinctive words, lowercased),
    which no rule knows as a secret alone: a word of 8 characters or more inside one is dropped."""
    found = found if found is not None else mask(text)
    held = [text[start:end].casefold() for start, end, _, _ in found.edits]

    def clean(word: str) -> bool:
        folded = word.casefold()
        return len(folded) < 8 or not any(folded in secret for secret in held)

    return clean


def move_offsets(meta: dict[str, Any], masked: Masked) -> None:
    """A chat chunk's ``messages`` say where each message starts in its text
    (``ingest.chat.message_offsets``): moved to where they are once the text is masked."""
    messages = meta.get("messages")
    if masked.edits and isinstance(messages, list):
        for entry in messages:
            if isinstance(entry, list) and len(entry) > 1 and isinstance(entry[1], int):
                entry[1] = masked.position(entry[1])


__all__ = [
    "IDENTITY",
    "RULES",
    "VERSION",
    "Masked",
    "Rule",
    "marker",
    "mask",
    "mask_chunk",
    "mask_document",
    "mask_value",
    "move_offsets",
    "not_secret",
]
