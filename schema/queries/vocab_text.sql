-- Text holding an indexed stem (:match, the stem as an FTS5 prefix query: "rebas"*), a few
-- passages and documents' topic fields: where "did you mean" reads the word as written
-- ("rebase" for the stem "rebas").
SELECT heading || ' ' || text AS text FROM chunks
WHERE id IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH :match LIMIT 3)
UNION ALL
SELECT title || ' ' || description || ' ' || tags || ' ' || topics FROM documents
WHERE id IN (SELECT rowid FROM documents_fts WHERE documents_fts MATCH :match LIMIT 3)
