-- layer_bodies for a search with no filter: a whole document's entry has the document's id,
-- so no join is needed at all. The same rows, in the same order, as layer_bodies.
SELECT rowid AS document_id, bm25(bodies_fts) AS score
FROM bodies_fts
WHERE bodies_fts MATCH :match
ORDER BY score
LIMIT :limit
