-- Layers 3 and 4 of the cascade: chunks whose text (or heading path) matches :match
-- (layer 3: the query's own terms; layer 4: each term or one of its synonyms).
-- One row per chunk, best first; the caller groups chunks into documents.
-- Column weights :w_heading, :w_text come from memdex/query/ranking.py.
SELECT c.id AS chunk_id, c.document_id, bm25(chunks_fts, :w_heading, :w_text) AS score
FROM chunks_fts
JOIN chunks c ON c.id = chunks_fts.rowid
JOIN documents d ON d.id = c.document_id
WHERE chunks_fts MATCH :match
  AND {{document_filter}}
ORDER BY score
LIMIT :limit
