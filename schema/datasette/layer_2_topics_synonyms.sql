-- title: Layer 2: topics + synonyms
-- description: As layer 1, with each key word of q or one of its synonyms (the synonyms table, both directions).
SELECT d.id AS document_id, d.title, d.kind, d.namespace, d.tags,
    round(bm25(documents_fts, 4.0, 1.5, 2.0, 2.0), 3) AS score,
    memdex_match(:q, 1) AS match_expression
FROM documents_fts
JOIN documents d ON d.id = documents_fts.rowid
WHERE documents_fts MATCH memdex_match(:q, 1)
ORDER BY score
LIMIT 50
