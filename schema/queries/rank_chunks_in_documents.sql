-- Rank chunks of the same documents against each other (:ids, a JSON array of chunk ids).
-- Every chunk's heading path starts with its document's title, so inside one document the
-- title cannot tell chunks apart: the heading counts a quarter, the text decides.
SELECT rowid AS id, bm25(chunks_fts, 0.25, 1.0) AS score FROM chunks_fts
WHERE chunks_fts MATCH :match AND rowid IN (SELECT value FROM json_each(:ids))
