-- layer_content for a search with no filter: the best :limit chunks by bm25 first, then their
-- documents. With no filter to apply, only those rows need a lookup in chunks: joining every
-- match before the sort cost a third of the query for long questions (issue 16). The same
-- rows, in the same order, as layer_content.
-- CROSS JOIN is SQLite's inner join in the order written; it also lets the ranked rows stream
-- into the lookup as a co-routine, where a plain JOIN first copies them to a temporary table:
-- a tenth of this query for long questions (issue 16).
SELECT c.id AS chunk_id, c.document_id, f.score
FROM (
    SELECT rowid AS id, bm25(chunks_fts, :w_heading, :w_text) AS score
    FROM chunks_fts
    WHERE chunks_fts MATCH :match
    ORDER BY score
    LIMIT :limit
) f
CROSS JOIN chunks c ON c.id = f.id
