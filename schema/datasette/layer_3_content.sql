-- title: Layer 3: content
-- description: Chunks whose text or heading holds every key word of q, best first, with where to read them.
SELECT c.id AS chunk_id, d.id AS document_id, d.title, c.heading, c.line_start, c.line_end,
    memdex_snippet(c.text, :q) AS snippet,
    round(bm25(chunks_fts, 2.0, 1.0), 3) AS score,
    memdex_match(:q) AS match_expression
FROM chunks_fts
JOIN chunks c ON c.id = chunks_fts.rowid
JOIN documents d ON d.id = c.document_id
WHERE chunks_fts MATCH memdex_match(:q)
ORDER BY score
LIMIT 50
