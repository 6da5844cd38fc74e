"""Every ranking weight memdex has, and the formulas that use them: the one place to change
how results are ordered.

Each weight says what it measured when it was chosen (``scripts/eval.py``); change one and
measure again. The BM25 column weights are bound into the named queries in
``schema/queries/`` as parameters (see :func:`bm25_params`); the Datasette canned queries in
``schema/datasette/`` repeat them as literals, and a test keeps the two equal.
"""

from __future__ import annotations

import json
import math
import sqlite3

from memdex.store import db

# -- the cascade's layers -------------------------------------------------------------------
LAYER_NAMES = {
    0: "date",
    1: "topics",
    2: "topics+synonyms",
    3: "content",
    4: "content+synonyms",
    5: "meaning",
}
MEANING_LAYER = 5  # a result the words did not find, found by the meaning pass alone
DATE_LAYER = 0  # a query of dates alone: a result found by its date (query/listing.py)

# relevance = layer weight x share of key terms matched x (0.8 + 0.2 x score / best score).
# A match on what a memory is filed under (its topics) outranks one in passing (its text),
# and the query's own words outrank synonyms.
LAYER_WEIGHT = {0: 1.0, 1: 1.0, 2: 0.9, 3: 0.85, 4: 0.75, 5: 0.7}

# -- a time the question names, with words (query/cascade.py, Cascade.fill_dated) --------------
# "What kitchen appliance did I buy 10 days ago?": the conversation that says "I just got a
# smoker today" shares no word with the question, yet the question says when. When a query
# names a period of at most DATED_FILL_DAYS days and its words find some results in it, but
# fewer than asked for, the period's other documents follow the words' (newest first; at chunk
# granularity each conversation by what the person said), marked as found by their date alone
# (layer 0). LongMemEval, all 119, words alone (scripts/eval.py --set longmemeval --fusion
# DATED_FILL_DAYS=N), evidence within 2,000 tokens / NDCG@10: off (0) 0.8665 / 0.9229; 1, 3, 7,
# 14 and 31 days alike 0.8749 / 0.9257 (the question above; none fell). 7, the middle: a
# week is a short enough time that its other documents are few.
DATED_FILL_DAYS = 7
DATED_STAGE = 7  # after every stage of the words (1-5) and meaning's own (6)
# A time said loosely ("last weekend": Friday to Monday; "a couple of days ago": 1 to 3 days
# ago, query/period.py) does not filter: a result that holds every key word and is dated then
# goes first (Candidate.dated_then; at chunk granularity its chunks rank first among the
# passages choose from), the rest are the words' at every time.
# LongMemEval (scripts/eval.py --set longmemeval --model ...), words / meaning, before (their
# words searched: "weekend", "couple", "ago") -> after: evidence 0.918 -> 0.927 / 0.923 ->
# 0.923, all@5 0.849 / 0.882 unchanged, NDCG@10 0.926 -> 0.930 / 0.935 -> 0.939; no other set
# has such a question. As a filter, with the other times' matches after the period's, NDCG@10
# with meaning fell to 0.933 (docs/benchmarks/notes.md).

# -- what holds now (query/latest.py) ----------------------------------------------------------
# A question that asks what holds now (ParsedQuery.about_now: "currently", or about the asker
# with no time of its own) gets, among a chunk search's results about the same thing, the
# newest first; the older say so. About the same thing: of different documents, sharing at
# least LATEST_SHARED of the question's words (all when it has fewer) and LATEST_SHARE of the
# older one's. Only the order of what is handed out moves, so no set's evidence can.
# LongMemEval's knowledge-update questions (two answer conversations each, the later one
# holding what is true), the newer shown first, words (scripts/eval.py --set longmemeval,
# "latest first"): off 0.500; LATEST_SHARE 0.25-0.67 0.833 (flat), 0.7-1 0.722; LATEST_SHARED
# 1 the same as 2 but twice the results marked older, 3 0.722. 0.5 and 2 taken; with the
# question rules as landed 0.889. docs/benchmarks/notes.md has the sweep.
LATEST_SHARED = 2
LATEST_SHARE = 0.5

# -- a period (a query of dates alone, query/listing.py) ------------------------------------
# Its documents are listed newest first: by date alone, no weight. Nothing measures what a
# mix of date and importance would gain -- no set has judgements of "what mattered in
# October" -- so the order is the one a reader can predict and check.
PERIOD_ORDER = "newest first"

# -- BM25 column weights (schema/queries/layer_topics.sql, layer_content.sql) ---------------
# The words a memory is filed under say more about what it is than its summary's words.
TOPIC_COLUMNS = {"title": 4.0, "description": 1.5, "tags": 2.0, "topics": 2.0}
# The heading path carries the document's title.
CONTENT_COLUMNS = {"heading": 2.0, "text": 1.0}

# -- synonyms -------------------------------------------------------------------------------
# A match through a synonym counts half of a match on the word itself, in ranking and in
# choosing a document's best chunk.
SYNONYM_WEIGHT = 0.5
# In a result's coverage (its share of key terms), a term found only through a synonym
# counts this much of a match.
SYNONYM_COVERAGE = 0.8

# -- the any-term pass ----------------------------------------------------------------------
# The any-term pass adds the topics score to the content score. Topic fields are short, so
# their raw bm25 runs large and, at weight 0.5, swamped the content score: Serena dev
# recall@10 0.807 -> 0.836 and SciFact nDCG@10 0.658 -> 0.699 going from 0.5 to 0.1.
# Layers 1-2 still put documents matching all terms in topics first.
TOPIC_WEIGHT = 0.1
# Half of a document's score in that pass is plain bm25 over its whole text, which counts
# words spread across sections together: Serena recall@10 0.822 -> 0.841 and MRR
# 0.740 -> 0.776 (plain FTS5 over whole files: 0.802 / 0.743); SciFact unchanged.
BODY_WEIGHT = 0.5
# At chunk granularity a chunk's score also counts how well its whole document matches, so a
# passage from the conversation the question is about outranks an echo from another one:
# chat questions with their gold turns inside a 2,000-token answer, dev split, 0.75 -> 0.80
# (scripts/eval.py --set chats); flat from 1.0 to 3.0.
CHUNK_CONTEXT_WEIGHT = 1.0
# The any-term pass leaves out a term found in at least this share of all passages (and in
# COMMON_MIN_ROWS of them), when some rarer term is left to search for. BM25 gives such a term
# little weight, but scoring it means reading its whole posting list, in every layer: at
# 100,000 generated notes, a common word with two rare ones took 180 ms (p50) and 330 ms (p95).
# Indexes of fewer passages than COMMON_MIN_ROWS are never pruned (SciFact, Serena: unchanged).
COMMON_SHARE = 0.05
COMMON_MIN_ROWS = 10_000

# -- conversation passages (passages/) ------------------------------------------------------
# At chunk granularity a conversation hands out windows of messages, not whole chunks. The
# messages of the best WINDOW_POOL chunks are scored one by one (passages/evidence.py):
#   BM25 of the message (MESSAGE_K1, MESSAGE_B; idf of the whole index, length against the
#   pool's mean message), plus the related words (FEEDBACK_*)
#   + NEIGHBOUR_WEIGHT x the better of its neighbours' words
#   + CHUNK_PRIOR x its chunk's place share + CONVERSATION_PRIOR x its conversation's best
#     chunk's place share (place_share: by the cascade's order, not its scores),
# and windows of WINDOW_BEFORE / WINDOW_AFTER messages around the best fill the budget.
#
# Measured on conversations nobody here wrote: LoCoMo's development half (scripts/eval.py
# --set locomo: gold turns whole within 2,000 tokens, 10 results; dev / test halves), with
# "twin" the same five conversations indexed beside a copy of them with the names changed
# (distractors a ten-conversation index would add), and our chat set beside it:
#   whole chunks, as before windows                  0.844 / 0.823  twin 0.818  chats 0.827
#   windows, chunk prior 0.75 by score share          0.817 / 0.848  twin 0.815  chats 0.907
#   + neighbours 0.5 and chunk prior 4                0.851 / 0.863  twin 0.829  chats 0.907
#   + shares by place, not score (PLACE_HALF 10)      0.859 / 0.863  twin 0.848  chats 0.900
#   + possessives read as their word (query/terms.py) 0.865 / 0.864  twin 0.854  chats 0.893
#   + a message chosen for its neighbour: no context  0.865 / 0.866  twin 0.855  chats 0.893
# Each weight moved alone, LoCoMo's 760 (its dev and test halves moved together); chosen from
# the middle of each flat region:
#   NEIGHBOUR_WEIGHT 0.25 / 0.5 / 0.75 / 1: 0.857 / 0.864 / 0.857 / 0.853
#   CHUNK_PRIOR 2 / 3 / 4 / 6: 0.856 / 0.862 / 0.864 / 0.858
#   CONVERSATION_PRIOR 2 / 3 / 4 / 5 / 6: 0.856 / 0.863 / 0.864 / 0.861 / 0.856
#   PLACE_HALF 5 / 7 / 10 / 14 / 20 / 40: 0.856 / 0.860 / 0.864 / 0.861 / 0.854 / 0.849
#   WINDOW_POOL 30 / 50 / 100: 0.864 / 0.865 / 0.863; MESSAGE_B 0.5: 0.862; FEEDBACK_MASS 1 / 3:
#   0.860 / 0.862. The chat set stays at 0.893-0.907 over all of them.
# Tried and dropped: every message of the pool's chunks a unit (the same figures); neighbours'
# words summed, not the better one (lower on both); context whole for every speaker up to
# 120 tokens (LoCoMo the same, chats 0.867); a later window of a conversation counting less
# (0.5: 0.859, chats 0.880); shares half by score, half by place (0.868, twin 0.852, chats
# 0.887); a long neighbour counting less for its length (no change).
WINDOW_POOL = 50
MESSAGE_K1 = 1.2
MESSAGE_B = 0.75
NEIGHBOUR_WEIGHT = 0.5
CHUNK_PRIOR = 4.0
CONVERSATION_PRIOR = 4.0
PLACE_HALF = 10  # a chunk's place share is PLACE_HALF / (PLACE_HALF + its place): 1, 0.91, ... 0.5 at 10
WINDOW_BEFORE = 1
WINDOW_AFTER = 1
# A message around a match is context: shown whole when it is at most its speaker's
# CONTEXT_TOKENS (default: CONTEXT_TOKENS_OTHER), else cut to that many tokens nearest the
# match (and then it is not evidence). The user's messages state the facts asked about later
# and are short; the assistant's replies around them mostly restate them. Dev: every role 25,
# 0.868; the user's 120 and the rest 25, 0.882 (the rest 45: 0.868, 100: 0.842, whole: 0.855).
CONTEXT_TOKENS = {"user": 120}
CONTEXT_TOKENS_OTHER = 25
# What a tool printed, a shell line or the model's thinking (agent sessions) counts this much
# of what was said: an error message only a tool output holds is still found, but a message
# that says the same words outranks it. The chat sets have none of these roles: unchanged.
UNSAID_ROLES = {"tool": 0.5, "shell": 0.5, "thinking": 0.5}


def bm25_term(idf: float, tf: int, length: int, mean_length: float) -> float:
    "One term's BM25 share in a message of ``length`` tokens (k1 MESSAGE_K1, b MESSAGE_B)."
    norm = MESSAGE_K1 * (1 - MESSAGE_B + MESSAGE_B * length / max(mean_length, 1.0))
    return idf * tf * (MESSAGE_K1 + 1) / (tf + norm)


# With meaning on (the semantic extra), a chunk's nearness -- its cosine to the question, 0 at
# MIN_SIMILARITY and 1 at the pool's nearest chunk -- adds MESSAGE_MEANING x nearness to each
# of its messages, and CONVERSATION_NEARNESS x nearness stands in for its conversation's share
# when higher. A chunk only meaning found goes out whole unless related words pick out its
# messages (none of them holds a query word). Before, meaning only added chunks below every
# word match: chats 0.847 with it and without. Chats dev with meaning (scripts/eval.py --set
# chats --split dev --model ...), MESSAGE_MEANING / CONVERSATION_NEARNESS: 0 / 0: 0.882 |
# 1 / 0: 0.895 | 1.5-2 / 0.5-1: 0.895 (flat) | 3 / 0.5: 0.908 | 4 / 0: 0.908 | 3 / 1: 0.882 |
# 2 / 2: 0.842. Chosen from the flat middle, not the edge: one dev question is 0.013.
MESSAGE_MEANING = 2.0
CONVERSATION_NEARNESS = 1.0


def unit_prior(chunk_share: float, conversation_share: float, nearness: float = 0.0) -> float:
    """What a message's chunk and conversation add to its score: each share is 0-1
    (:func:`place_share`); ``nearness`` is its chunk's, 0-1 (:func:`nearness`)."""
    return CHUNK_PRIOR * chunk_share + CONVERSATION_PRIOR * conversation_share + MESSAGE_MEANING * nearness


def place_share(place: int) -> float:
    """How a chunk's place in the cascade's order (0-based) counts: 1 for the first, half at
    PLACE_HALF. By place, not by score: chunks that matched every key word come first whatever
    their BM25, and the any-term pass's scores add a document's context, so the scores of the
    cascade's stages do not compare."""
    return PLACE_HALF / (PLACE_HALF + place)


def nearness(similarity: float | None, nearest: float) -> float:
    "A chunk's cosine to the question as 0 at MIN_SIMILARITY to 1 at ``nearest``; 0 if meaning missed it."
    if similarity is None or nearest <= MIN_SIMILARITY:
        return 0.0
    return max(0.0, min((similarity - MIN_SIMILARITY) / (nearest - MIN_SIMILARITY), 1.0))


# Related words (passages/feedback.py): the FEEDBACK_TERMS words that weigh most in the best
# FEEDBACK_MESSAGES messages (share of the message x how well it ranked x idf) count in every
# message's score, together as much as FEEDBACK_MASS query words, and in a message that holds
# a query word at most as much as its own words (passages/evidence.py). Chats, gold within 2,000
# tokens (scripts/eval.py --set chats [--model ...]), dev / test: none, words 0.882 / 0.865,
# meaning 0.895 / 0.905. Chosen on dev from the middle of the flat part, 3 / 10 / 2: words
# 0.895 / 0.919, meaning 0.895 / 0.932. Around it: mass 1-4 x 3-5 messages x 10-20 words,
# words dev 0.868-0.895, test 0.878-0.919; meaning dev 0.882-0.908, test 0.892-0.946. Each
# word at a query word's half instead (not shared out): words 0.895 / 0.919, but meaning fell
# to 0.868 / 0.932 -- one long wrong message at the top fed itself. Without the cap the same
# figures, but seven near-identical messages that all hold the related words drowned the one
# message only meaning found (tests/test_windows.py).
FEEDBACK_MESSAGES = 3
FEEDBACK_TERMS = 10
FEEDBACK_MASS = 2.0


# The order a chunk search's units are packed in under its budget: the best unit first, then
# each by its score for the budget it takes. A message the person wrote keeps its score; one
# anyone else wrote (the assistant's reply, a tool's output) longer than LONG_MESSAGE tokens
# counts LONG_MESSAGE / its tokens of it. A question about someone's history is answered by what
# they said in passing, in several conversations; an assistant's long reply that repeats the
# question's words filled the budget first (LongMemEval dev, evidence 0.809 -> 0.885).
# Measured on every set's 2,000-token chunk search, words alone, each value one run (chats /
# LoCoMo / LongMemEval dev / LongMemEval all):
#   off: 0.900 / 0.866 / 0.808 / 0.775        LONG_MESSAGE  50: 0.940 / 0.838 / 0.875 / 0.884
#   75: 0.907 / 0.864 / 0.888 / 0.890         100: 0.900 / 0.866 / 0.893 / 0.893
#   125: 0.900 / 0.866 / 0.885 / 0.867        150: 0.900 / 0.866 / 0.885 / 0.864
#   200: 0.900 / 0.866 / 0.844 / 0.824        400: the same as off
# LoCoMo falls below 100, LongMemEval below 200: 125 is the middle of what nothing falls on.
# Tried and dropped: the whole cost of a unit (its context too) instead of its message (LoCoMo
# 0.844 at 100, 0.861 at 300); every conversation's best unit before any second one (chats 0.800,
# LoCoMo 0.847, LongMemEval 0.616: weak conversations took the result limit); short units in a
# first pass (a cliff: 0.829 at 300 tokens, 0.777 at 450). docs/benchmarks/notes.md has them all.
LONG_MESSAGE = 125
PERSON_ROLES = {"user"}
# A question in the first person ("How many musical instruments do I own?", query.terms
# ParsedQuery.about_asker) asks about whoever asks it, and what they said is the evidence: their
# own messages pack at PERSON_WEIGHT x their score. The assistant's reply that holds the
# question's words ("music", "instruments") had gone before the person's "I'm looking for a
# technician to service my Korg B1". Only the order of packing moves, not which messages are
# units, and only for such questions: LoCoMo's are about the people in it ("What does Nate
# ...?"), and there the person's messages are one speaker's, not the asker's (weighting them
# for every question: LoCoMo 0.866 -> 0.798). scripts/eval.py --set longmemeval|chats|locomo,
# words, all / dev / test (LoCoMo: no question is in the first person, unchanged at every w):
#   w      LongMemEval                 chats
#   1      0.875 / 0.885 / 0.865       0.900 / 0.868 / 0.932   (off)
#   1.25   0.899 / 0.893 / 0.905       0.907 / 0.882 / 0.932
#   1.5    0.899 / 0.888 / 0.910       0.913 / 0.895 / 0.932
#   2      0.910 / 0.888 / 0.933       0.927 / 0.921 / 0.932
#   2.5    0.910 / 0.888 / 0.933       0.933 / 0.921 / 0.946
#   3      0.893 / 0.871 / 0.916       0.933 / 0.921 / 0.946
# LongMemEval's dev half is flat from 1.25 to 2.5 and falls at 3; 2 is the middle. With the
# exception for a question asking what the other side said (query.terms, one dev question):
# LongMemEval 0.918 / 0.904 / 0.933. Tried and dropped: the person's words weighed more in the
# messages' own scores, which also feed the related words (LongMemEval 0.887 at 2, but chats
# 0.893: a fall); docs/benchmarks/notes.md.
PERSON_WEIGHT = 2.0


def packing_score(score: float, role: str, tokens: int, about_asker: bool = False) -> float:
    """A unit's score for the order units are packed in: less for another speaker's long
    message; more for the person's own when the question is about them (``about_asker``)."""
    if role in PERSON_ROLES:
        return score * PERSON_WEIGHT if about_asker else score
    return score / max(1.0, tokens / LONG_MESSAGE)


def role_weight(role: str) -> float:
    "How much a message's words count for its speaker: 1, or less for a tool, shell or thinking."
    return UNSAID_ROLES.get(role, 1.0)


def context_tokens(role: str) -> int:
    return CONTEXT_TOKENS.get(role, CONTEXT_TOKENS_OTHER)


# -- refinement (answer mode) ---------------------------------------------------------------
# Reciprocal-rank fusion of the rounds: score = sum of weight / (RRF_K + rank).
RRF_K = 10
LATER_ROUND_WEIGHT = 0.5


# -- meaning (the semantic extra) ----------------------------------------------------------
# Words and meaning are fused by reciprocal rank: a result's score is
#   WORDS_WEIGHT / (FUSION_K + its rank by words) + meaning weight / (FUSION_K + its rank by meaning)
# (a list it is missing from adds nothing). Results that matched all key words in a layer
# keep their place ahead of the fused rest when ALL_TERMS_FIRST: exact names, dates and
# identifiers stay the words' job. Tuned on the dev halves (scripts/eval.py --model ...
# --split dev --fusion ...), Serena recall@10, words alone 0.844:
#   words:meaning 2:1, k 60: 0.858 | 1.5:1, k 60: 0.871 | 1.5:1, k 10: 0.889 | 1.5:1, k 20: 0.891
#   all-terms-first off (1:1, k 60): 0.851, on: 0.858.
# Conversations: chat questions turn on names and dates, which vectors match poorly; meaning
# counts CONVERSATION_MEANING there. Chats dev, gold turns within 2,000 tokens, words 0.829:
#   0: 0.829 | 0.25: 0.868 | 0.5: 0.882 | 0.75: 0.868 | 1: 0.855.
# Vectors of whole chunks (embed's coverage "whole", the default since issue 30) find more on
# their own and earn more weight: MEANING_WEIGHT_WHOLE counts for them. All sets' dev halves in
# one run each (scripts/bench_meaning.py quality --set all --fusion MEANING_WEIGHT=W: the
# weight of the vectors measured), int8, SciFact nDCG@10 / Serena recall@10 / paraphrases:
#   1.0: 0.712 / 0.896 / 0.70 | 1.25: 0.719 / 0.909 / 0.74 | 1.5: 0.720 / 0.916 / 0.76 |
#   1.75: 0.717 / 0.909 / 0.74 | 2.0: 0.715 / 0.902 / 0.72 (fp32 the same within 0.003);
# chats and LoCoMo count CONVERSATION_MEANING and do not move. The flat region is 1.25-1.75;
# its middle is taken.
FUSION_K = 20
WORDS_WEIGHT = 1.5
MEANING_WEIGHT = 1.0  # vectors of a chunk's opening (coverage "first"), as tuned above
MEANING_WEIGHT_WHOLE = 1.5
ALL_TERMS_FIRST = True
CONVERSATION_MEANING = 0.5
MEANING_DEPTH = 100  # nearest chunks the meaning pass considers
MIN_SIMILARITY = 0.2  # below this cosine a chunk is not near enough to be a result


def fuse_score(
    words_rank: int | None, meaning_rank: int | None, meaning_weight: float = MEANING_WEIGHT
) -> float:
    "A result's fused score from its 0-based ranks by words and by meaning (None: not found)."
    score = 0.0
    if words_rank is not None:
        score += WORDS_WEIGHT / (FUSION_K + words_rank + 1)
    if meaning_rank is not None:
        score += meaning_weight / (FUSION_K + meaning_rank + 1)
    return score


def meaning_weight(conversation: bool, whole: bool = False) -> float:
    """How much the meaning pass counts for a result: from a conversation, or a memory or note
    (``whole``: its vectors read all of each chunk)."""
    if conversation:
        return CONVERSATION_MEANING
    return MEANING_WEIGHT_WHOLE if whole else MEANING_WEIGHT


def meaning_relevance(similarity: float) -> float:
    "Relevance of a result only meaning found: its layer's weight x its cosine to the query."
    return LAYER_WEIGHT[MEANING_LAYER] * max(0.0, min(similarity, 1.0))


def shown_scores(groups: list[list[float]]) -> list[float]:
    """The ``score`` each result shows, in result order: higher is always earlier.

    ``groups`` are the raw scores of the results, group by group in the order shown (the
    cascade's stages: a layer's all-words matches, then the any-word pass; with meaning, the
    fused rest), each group's already best first. A group's scores (BM25, or the fused
    reciprocal-rank score) compare only within it, so each group keeps its own differences and
    is lifted just above the groups after it."""
    out: list[list[float]] = []
    floor: float | None = None  # the best score of the groups after this one
    for raw in reversed(groups):
        lift = 0.0 if floor is None or not raw else max(0.0, floor - min(raw) + SHOWN_GAP)
        shown = [round(r + lift, 4) for r in raw]
        out.append(shown)
        if shown:
            floor = shown[0] if floor is None else max(floor, shown[0])
    return [v for group in reversed(out) for v in group]


SHOWN_GAP = 0.01  # how far a group's last result stays above the next group's first


def bm25_params() -> dict[str, float]:
    "The column weights as the named parameters the layer queries take (``:w_title``...)."
    return {f"w_{name}": weight for name, weight in {**TOPIC_COLUMNS, **CONTENT_COLUMNS}.items()}


def relevance(layer: int, coverage: float, strength: float) -> float:
    """A result's relevance, 0-1: its layer's weight x the share of key terms it covers x a
    little for how its score compares with the best of its stage (``strength``, 0-1)."""
    return LAYER_WEIGHT[layer] * coverage * (0.8 + 0.2 * max(0.0, min(strength, 1.0)))


def idf(total: int, df: int) -> float:
    "Inverse document frequency as BM25 (and FTS5) compute it: rare words weigh more."
    return math.log(1 + (total - df + 0.5) / (df + 0.5))


def index_idf(conn: sqlite3.Connection, stems: list[str]) -> dict[str, float]:
    "The index's own idf for each stem it holds (stems it does not hold are left out)."
    return idf_of(*index_frequencies(conn, stems))


def idf_of(total: int, frequencies: dict[str, int]) -> dict[str, float]:
    "idf of each stem some of ``total`` chunks hold (``frequencies``: stem -> chunks holding it)."
    if not total:
        return {}
    return {s: idf(total, df) for s, df in frequencies.items() if df > 0}


def index_frequencies(conn: sqlite3.Connection, stems: list[str]) -> tuple[int, dict[str, int]]:
    """How many chunks there are, and how many hold each stem (0: none), in sorted order.

    Both are kept with the connection while the index is unchanged (``db.memo``): counting a
    common word's chunks reads its every posting, 8 ms at 100,000 notes (issue 16)."""
    if not stems:
        return 0, {}
    known = db.memo(conn, "chunk_frequencies")  # stem -> chunks holding it
    wanted = sorted(set(stems))
    missing = [s for s in wanted if s not in known]
    if missing:
        found = dict(conn.execute(db.query("term_frequencies"), {"terms": json.dumps(missing)}).fetchall())
        known.update({s: found.get(s, 0) for s in missing})
    return db.chunk_count(conn), {s: known[s] for s in wanted}


def fuse_rounds(rank: int, later: bool) -> float:
    "A result's share of reciprocal-rank fusion for its ``rank`` (0-based) in one round."
    return (LATER_ROUND_WEIGHT if later else 1.0) / (RRF_K + rank + 1)


# Refinement (answer.refine): what a round counts as a thin area, a gap and a finding's label.
# A namespace with fewer results than this in a round is thin: the next round searches it alone.
THIN_NAMESPACE = 2
NAMESPACES_PER_ROUND = 3  # at most this many namespaces searched alone per round
# A round matching more documents than this many times its limit is too broad to read.
TOO_MANY_PER_LIMIT = 10
HIGH_RELEVANCE = 0.7  # a finding's label: high at or above this, medium at or above
MEDIUM_RELEVANCE = 0.5  # this (the iterative-retrieval pattern's floor), low below it
EVIDENCE_CHARS = 150  # a finding's evidence: at most this many characters
# An answer sends sources of at least this relevance, unless none reaches it (answer.synthesis).
SOURCE_FLOOR = MEDIUM_RELEVANCE


def relevance_label(relevance: float) -> str:
    "high, medium or low: how a finding's relevance reads."
    if relevance >= HIGH_RELEVANCE:
        return "high"
    return "medium" if relevance >= MEDIUM_RELEVANCE else "low"
