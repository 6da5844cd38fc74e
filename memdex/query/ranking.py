"""The cascade's four layers: names, and how much a match in each is worth (relevance)."""

LAYER_NAMES = {1: "topics", 2: "topics+synonyms", 3: "content", 4: "content+synonyms"}

# relevance = layer weight x share of key terms matched x (0.8 + 0.2 x score / best score).
# A match on what a memory is filed under (its topics) outranks one in passing (its text),
# and the query's own words outrank synonyms.
LAYER_WEIGHT = {1: 1.0, 2: 0.9, 3: 0.85, 4: 0.75}

# A match through a synonym counts half of a match on the word itself, in ranking and in
# choosing a document's best chunk.
SYNONYM_WEIGHT = 0.5
