-- Which of these chunks (:ids, a JSON array) match :match, and how well (lower is better).
SELECT rowid AS id, bm25(chunks_fts, 2.0, 1.0) AS score FROM chunks_fts
WHERE chunks_fts MATCH :match AND rowid IN (SELECT value FROM json_each(:ids))
