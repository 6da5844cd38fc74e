-- title: Layer 1: topics
-- description: Documents whose title, description, tags or topics hold every key word of q (stopwords dropped, words escaped).
SELECT d.id AS document_id, d.title, d.kind, d.namespace, d.tags,
    round(bm25(documents_fts, 4.0, 1.5, 2.0, 2.0), 3) AS score,
    memdex_match(:q) AS match_expression
FROM documents_fts
JOIN documents d ON d.id = documents_fts.rowid
WHERE documents_fts MATCH memdex_match(:q)
ORDER BY score
LIMIT 50
