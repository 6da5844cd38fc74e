"""What a token is: the one place where text becomes the words the full-text index holds.

memdex makes every token itself, in Python, the same way for what it indexes and for what is
asked, and hands SQLite's FTS5 the tokens as text joined by spaces (the SQL function
``memdex_words``, see ``store.db``). FTS5 only splits that text at its spaces: the tables are
declared with the ``ascii`` tokenizer, which changes nothing in a token made here. So a word
the index holds is found by every form of it, whatever door asks.

A token is made from a word in three steps:

1. **Fold**: lower case by ``str.casefold`` ("Straße" is "strasse", a final sigma a sigma),
   accents and other marks removed, ligatures and full-width letters made plain (NFKD);
   Chinese, Japanese and Korean characters are only made of normal width (NFKC), so kana
   keep their voicing marks (ガ is not カ).
2. **Split** into words: runs of letters and digits, as FTS5's unicode61 tokenizer splits;
   inside a word, a run of Chinese, Japanese or Korean characters is cut from the letters
   around it ("pythonで書いた" is "python" and "で書いた").
3. **Stem** a word by the Snowball English stemmer (Porter2, through PyStemmer), so a word
   family is one token: "deploy", "deploys", "deployed", "deployment" are all "deploy".
   A run of Chinese, Japanese or Korean characters, written without spaces, becomes its
   overlapping pairs of characters, as Lucene's CJK analyzer does: "東京都" is "東京 京都",
   so "東京" finds it; a query of such a run is the phrase of its pairs, and a query of one
   character matches the pairs it begins (``phrase``).

``IDENTITY`` names these rules; an index records the identity it was built with and is
rebuilt once when it changes (``store.db``), so what is stored and what is asked never
disagree.
"""

from __future__ import annotations

import re
import threading
import unicodedata

import Stemmer

# Raise this when the rules above change in a way that changes any token.
RULES = 1
IDENTITY = (
    f"memdex tokens {RULES}; snowball english (PyStemmer {Stemmer.version()}); "
    f"unicode {unicodedata.unidata_version}"
)

# Words too common to search by ("what did we ... about"): a query keeps them out of its key
# terms, related words leave them out (query.terms, query.passages.feedback, ingest.chat).
STOPWORDS = frozenset(
    """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves ever anything something tell show find search list give get got there's
    what's i'm we've let's us also please much many say said mention mentioned told""".split()
)

# A word: letters and digits; everything else separates (as FTS5's unicode61 does).
WORD = re.compile(r"[^\W_]+")

# Chinese, Japanese and Korean scripts, written without spaces between words: Han (with its
# radicals, compatibility forms and the extension planes), iteration marks, kana, Hangul and
# Bopomofo.
_CJK_RANGES = (
    "\u1100-\u11ff\u2e80-\u2fdf\u3005-\u3007\u3021-\u3029\u3031-\u3035\u303b\u3040-\u30ff"
    "\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\ua960-\ua97f\uac00-\ud7ff\uf900-\ufaff\U00020000-\U0003ffff"
)
_CJK = re.compile(f"[{_CJK_RANGES}]")
_CJK_OR_NOT = re.compile(f"[{_CJK_RANGES}]+|[^{_CJK_RANGES}]+")
# Half- and full-width forms: made plain by NFKC (ｶﾞ is ガ, Ｐｙ is Py) before anything else.
_WIDTH = re.compile("[\uff00-\uffef]+")
_NOT_ASCII = re.compile(r"[^\x00-\x7f]+")

# Words longer than this are kept whole (hashes, base64): no English ending to take off.
LONGEST_STEMMED = 64
# The Snowball rules that change a word's first two letters: every other stem begins as its
# word does, which lets a reader stem only the words that may match (``tokens_among``).
_RESPELT = {"die": "dy", "lie": "ly", "tie": "ty"}  # dying, lying, tying


def fold(text: str) -> str:
    "Step 1 of the module docstring: case, accents, ligatures and widths folded."
    folded = text.casefold()
    if folded.isascii():
        return folded
    return _NOT_ASCII.sub(_fold_run, folded)


def _fold_run(match: re.Match[str]) -> str:
    run = _WIDTH.sub(lambda m: unicodedata.normalize("NFKC", m.group()).casefold(), match.group())
    if not _CJK.search(run):
        return _strip_marks(run)
    return "".join(
        unicodedata.normalize("NFKC", piece) if _CJK.match(piece) else _strip_marks(piece)
        for piece in _CJK_OR_NOT.findall(run)
    )


def _strip_marks(run: str) -> str:
    decomposed = unicodedata.normalize("NFKD", run)
    # casefold again: a compatibility form may decompose to a capital (𝓐 is A)
    return "".join(c for c in decomposed if not unicodedata.combining(c)).casefold()


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


def words(text: str) -> list[str]:
    "The folded words of a text (steps 1 and 2)."
    return split_words(fold(text))


# -- stems -------------------------------------------------------------------------------------
# PyStemmer's stemmers are not safe to share between threads: one a thread. Their stems are
# kept in one dict for every thread (a word's stem never changes), emptied when it grows past
# _KEPT words, so a long-running watcher's memory stays bounded.
_local = threading.local()
_stems: dict[str, str] = {}
_KEPT = 200_000


def stem(word: str) -> str:
    "The Snowball English stem of a folded word with no CJK in it (step 3)."
    known = _stems.get(word)
    if known is not None:
        return known
    if len(word) > LONGEST_STEMMED:
        return word
    stemmer = getattr(_local, "stemmer", None)
    if stemmer is None:
        stemmer = _local.stemmer = Stemmer.Stemmer("english", 0)  # no cache of its own
    if len(_stems) >= _KEPT:
        _stems.clear()
    _stems[word] = found = stemmer.stemWord(word)
    return found


def word_tokens(word: str) -> list[str]:
    "The tokens of one folded word: its stem, or for CJK in it, the pairs of each CJK run."
    if word.isascii() or not _CJK.search(word):
        return [stem(word)]
    out: list[str] = []
    for piece in _CJK_OR_NOT.findall(word):
        if not _CJK.match(piece):
            out.append(stem(piece))
        elif len(piece) == 1:
            out.append(piece)
        else:
            out += [piece[i : i + 2] for i in range(len(piece) - 1)]
    return out


def tokens(text: str) -> list[str]:
    "Every token of a text, in order: what the full-text index holds for it."
    found = words(text)
    if text.isascii():
        get = _stems.get
        return [get(w) or stem(w) for w in found]
    return [t for w in found for t in word_tokens(w)]


def index_text(text: str | None) -> str:
    "A text as FTS5 is given it: its tokens joined by spaces (the SQL function memdex_words)."
    if not text:
        return ""
    return " ".join(tokens(text))


def has_cjk(text: str) -> bool:
    return _CJK.search(text) is not None


def tokens_among(text: str, prefixes: set[str]) -> list[str]:
    """``tokens(text)``, but a word whose first two letters are not in ``prefixes`` is not
    stemmed: it becomes "" (it cannot match), keeping positions for phrase checks. ``prefixes``
    comes from ``prefixes_of`` the tokens looked for."""
    out: list[str] = []
    for w in words(text):
        if w.isascii() or not _CJK.search(w):
            out.append(stem(w) if w[:2] in prefixes or len(w) < 2 else "")
        else:
            out += word_tokens(w)
    return out


def prefixes_of(token: str) -> set[str]:
    "The first two letters a word with this token may begin with (see ``tokens_among``)."
    first = token[:2]
    respelt = _RESPELT.get(token)
    return {first, respelt} if respelt else {first}


def phrase(typed_words: list[str]) -> str:
    """The FTS5 phrase that finds these words (as typed) wherever the index holds them, in
    order: their tokens quoted, so no text is FTS5 syntax. One CJK character alone matches
    the pairs it begins as well as itself. ``""`` (matches nothing) when there is no token."""
    toks = tokens(" ".join(typed_words))
    if not toks:
        return '""'
    quoted = '"' + " ".join(toks) + '"'
    if len(toks) == 1 and len(toks[0]) == 1 and has_cjk(toks[0]):
        return quoted + "*"
    return quoted
