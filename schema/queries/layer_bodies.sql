-- Whole-document content score for the any-term pass: bm25 over each document's full text,
-- so words spread across its sections count together. Lower is better.
SELECT d.id AS document_id, bm25(bodies_fts) AS score
FROM bodies_fts
JOIN documents d ON d.id = bodies_fts.rowid
WHERE bodies_fts MATCH :match
  AND {{document_filter}}
ORDER BY score
LIMIT :limit
