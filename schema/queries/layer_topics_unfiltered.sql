-- layer_topics for a search with no filter: a document's entry has the document's id, so no
-- join is needed at all. The same rows, in the same order, as layer_topics.
SELECT rowid AS document_id, bm25(documents_fts, :w_title, :w_description, :w_tags, :w_topics) AS score
FROM documents_fts
WHERE documents_fts MATCH :match
ORDER BY score
LIMIT :limit
