"""Tokens and stems exactly as the FTS5 ``porter unicode61 remove_diacritics 2`` tokenizer
makes them, so the explanation of a result ("which words matched where") can be computed in
Python over the few results shown, instead of one FTS query per word.

Ranking never depends on this module: it only explains what SQL already ranked.
tests/test_stem.py checks it against SQLite's own tokenizer on every word of the corpora.
"""

from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

# A word as unicode61 splits text: letters and digits; everything else separates.
WORD = re.compile(r"[^\W_]+")
_VOWELS = frozenset("aeiou")


# unicode61 keeps ligatures and superscripts (so NFD, not NFKD) but folds these two, common in
# scientific and old text; tests/test_stem.py holds the rest to what SQLite does.
_UNICODE61_EXTRA = str.maketrans({"µ": "μ", "ſ": "s"})


def fold(text: str) -> str:
    "Lowercase, accents removed: as unicode61 with remove_diacritics 2 does for real text."
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    # Only the runs of non-ASCII characters change: NFD decomposes character by character, and
    # the combining marks it reorders are all removed. Folding the runs alone spares a
    # character-by-character pass over a long text with a few accents (a scientific abstract).
    return _NOT_ASCII.sub(_fold_run, lowered)


_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")


def _fold_run(match: re.Match[str]) -> str:
    decomposed = unicodedata.normalize("NFD", match.group().translate(_UNICODE61_EXTRA))
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def words(text: str) -> list[str]:
    return split_words(fold(text))


def split_words(text: str) -> list[str]:
    """``WORD.findall(text)``, in C for the most part: ASCII separators become spaces in the
    UTF-8 bytes (which leaves every other character whole) and ``str.split`` cuts there; only
    a piece with other characters left in it goes to the pattern. A long abstract: a fifth of
    the time when it is ASCII, half when it is not (issue 16)."""
    pieces = text.encode("utf-8", "surrogatepass").translate(_ASCII_SPACES)
    split = pieces.decode("utf-8", "surrogatepass").split()
    if text.isascii():
        return split
    out: list[str] = []
    for piece in split:
        if piece.isascii():
            out.append(piece)
        else:
            out += WORD.findall(piece)
    return out


# Every ASCII byte that is not a letter or digit, as a space (bytes of other characters are
# kept). Such bytes separate words, as do the Unicode spaces str.split() also cuts at.
_ASCII_SPACES = bytes(b if b >= 128 or chr(b).isalnum() else 32 for b in range(256))


def stems(text: str) -> list[str]:
    return [stem(w) for w in words(text)]


def prefix(word_or_stem: str) -> str:
    """What a word and its stem always share: Porter only rewrites endings, so the first two
    characters survive (tests/test_stem.py checks it on every word of the corpora)."""
    return word_or_stem[:2]


def stems_among(text: str, prefixes: set[str]) -> list[str]:
    """Stems of the words of ``text``, stemming only words whose prefix is among ``prefixes``;
    the others become "" (they cannot match), keeping positions for phrase checks."""
    return [stem(w) if w[:2] in prefixes or len(w) < 2 else "" for w in words(text)]


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter's algorithm as FTS5 applies it: on the UTF-8 bytes of tokens of 3 to 64 bytes,
    any byte that is not an ASCII vowel counting as a consonant (so "straße" -> "straß")."""
    data = word.encode("utf-8")
    if len(data) < 3 or len(data) > 64:
        return word
    w = data.decode("latin-1")  # one character per byte; suffixes are ASCII
    w = _step1a(w)
    w = _step1b(w)
    w = _step1c(w)
    w = _step2(w)
    w = _step3(w)
    w = _step4(w)
    w = _step5(w)
    return w.encode("latin-1").decode("utf-8", errors="replace")


def _is_consonant(w: str, i: int) -> bool:
    c = w[i]
    if c in _VOWELS:
        return False
    if c == "y":
        return i == 0 or not _is_consonant(w, i - 1)
    return True


def _measure(stem_: str) -> int:
    "m in [C](VC)^m[V]: how many vowel-consonant sequences the stem has."
    m = 0
    i = 0
    n = len(stem_)
    while i < n and _is_consonant(stem_, i):
        i += 1
    while i < n:
        while i < n and not _is_consonant(stem_, i):
            i += 1
        if i >= n:
            break
        while i < n and _is_consonant(stem_, i):
            i += 1
        m += 1
    return m


def _has_vowel(stem_: str) -> bool:
    return any(not _is_consonant(stem_, i) for i in range(len(stem_)))


def _double_consonant(w: str) -> bool:
    return len(w) >= 2 and w[-1] == w[-2] and _is_consonant(w, len(w) - 1)


def _cvc(w: str) -> bool:
    "Ends consonant-vowel-consonant, the last not w, x or y (hop, not hoop)."
    if len(w) < 3:
        return False
    return (
        _is_consonant(w, len(w) - 3)
        and not _is_consonant(w, len(w) - 2)
        and _is_consonant(w, len(w) - 1)
        and w[-1] not in "wxy"
    )


def _step1a(w: str) -> str:
    if w.endswith("sses"):
        return w[:-2]
    if w.endswith("ies"):
        return w[:-2]
    if w.endswith("ss"):
        return w
    if w.endswith("s"):
        return w[:-1]
    return w


def _step1b(w: str) -> str:
    if w.endswith("eed") and len(w) > 3:  # SQLite matches a suffix only inside a longer word
        return w[:-1] if _measure(w[:-3]) > 0 else w
    for suffix in ("ed", "ing"):
        if w.endswith(suffix) and _has_vowel(w[: -len(suffix)]):
            w = w[: -len(suffix)]
            if w.endswith(("at", "bl", "iz")):
                return w + "e"
            if _double_consonant(w) and w[-1] not in "lsz":
                return w[:-1]
            if _measure(w) == 1 and _cvc(w):
                return w + "e"
            return w
    return w


def _step1c(w: str) -> str:
    if w.endswith("y") and _has_vowel(w[:-1]):
        return w[:-1] + "i"
    return w


_STEP2 = (
    ("ational", "ate"),
    ("tional", "tion"),
    ("enci", "ence"),
    ("anci", "ance"),
    ("izer", "ize"),
    ("bli", "ble"),
    ("alli", "al"),
    ("entli", "ent"),
    ("eli", "e"),
    ("ousli", "ous"),
    ("ization", "ize"),
    ("ation", "ate"),
    ("ator", "ate"),
    ("alism", "al"),
    ("iveness", "ive"),
    ("fulness", "ful"),
    ("ousness", "ous"),
    ("aliti", "al"),
    ("iviti", "ive"),
    ("biliti", "ble"),
    ("logi", "log"),
)
_STEP3 = (
    ("icate", "ic"),
    ("ative", ""),
    ("alize", "al"),
    ("iciti", "ic"),
    ("ical", "ic"),
    ("ful", ""),
    ("ness", ""),
)
_STEP4 = (
    "al",
    "ance",
    "ence",
    "er",
    "ic",
    "able",
    "ible",
    "ant",
    "ement",
    "ment",
    "ent",
    "ion",
    "ou",
    "ism",
    "ate",
    "iti",
    "ous",
    "ive",
    "ize",
)


def _replace(w: str, rules: tuple[tuple[str, str], ...]) -> str:
    for suffix, replacement in rules:
        if w.endswith(suffix):
            stem_ = w[: -len(suffix)]
            return stem_ + replacement if _measure(stem_) > 0 else w
    return w


def _step2(w: str) -> str:
    return _replace(w, _STEP2)


def _step3(w: str) -> str:
    return _replace(w, _STEP3)


_STEP4_LONGEST_FIRST = sorted(_STEP4, key=len, reverse=True)


def _step4(w: str) -> str:
    for suffix in _STEP4_LONGEST_FIRST:
        if w.endswith(suffix):
            stem_ = w[: -len(suffix)]
            if _measure(stem_) <= 1:
                return w
            if suffix == "ion" and not stem_.endswith(("s", "t")):
                return w
            return stem_
    return w


def _step5(w: str) -> str:
    if w.endswith("e"):
        stem_ = w[:-1]
        m = _measure(stem_)
        if m > 1 or (m == 1 and not _cvc(stem_)):
            w = stem_
    if w.endswith("ll") and _measure(w) > 1:
        w = w[:-1]
    return w
