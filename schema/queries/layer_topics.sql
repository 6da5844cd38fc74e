-- Layers 1 and 2 of the cascade: documents whose title, description, tags or topics match
-- :match (layer 1: the query's own terms; layer 2: each term or one of its synonyms).
-- bm25() is lower-is-better, so ascending order puts the best match first. Column weights:
-- title 4, description 1.5, tags 2, topics 2 -- the words a memory is filed under say more
-- about what it is than the words of its summary.
SELECT d.id AS document_id, bm25(documents_fts, 4.0, 1.5, 2.0, 2.0) AS score
FROM documents_fts
JOIN documents d ON d.id = documents_fts.rowid
WHERE documents_fts MATCH :match
  AND {{document_filter}}
ORDER BY score
LIMIT :limit
