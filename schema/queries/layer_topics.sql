-- Layers 1 and 2 of the cascade: documents whose title, description, tags or topics match
-- :match (layer 1: the query's own terms; layer 2: each term or one of its synonyms).
-- bm25() is lower-is-better, so ascending order puts the best match first. The column
-- weights :w_title, :w_description, :w_tags, :w_topics come from memdex/query/ranking.py.
SELECT d.id AS document_id, bm25(documents_fts, :w_title, :w_description, :w_tags, :w_topics) AS score
FROM documents_fts
JOIN documents d ON d.id = documents_fts.rowid
WHERE documents_fts MATCH :match
  AND {{document_filter}}
ORDER BY score
LIMIT :limit
