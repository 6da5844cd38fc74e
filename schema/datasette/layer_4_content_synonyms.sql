-- title: Layer 4: content + synonyms
-- description: As layer 3, with each key word of q or one of its synonyms.
SELECT c.id AS chunk_id, d.id AS document_id, d.title, c.heading, c.line_start, c.line_end,
    memdex_snippet(c.text, :q) AS snippet,
    round(bm25(chunks_fts, 2.0, 1.0), 3) AS score,
    memdex_match(:q, 1) AS match_expression
FROM chunks_fts
JOIN chunks c ON c.id = chunks_fts.rowid
JOIN documents d ON d.id = c.document_id
WHERE chunks_fts MATCH memdex_match(:q, 1)
ORDER BY score
LIMIT 50
