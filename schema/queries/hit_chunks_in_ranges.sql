-- hit_chunks_matching, with the term match asked of each document's own range of chunk ids
-- (rowid BETWEEN, which FTS5 seeks to) instead of the whole index. The same rows, in the
-- same order. It costs a seek per word and document; matching the whole index reads every
-- posting of the words, which for common words in a large index costs more (issue 16:
-- at 100,000 notes, 18 ms a search against under 2).
SELECT id, document_id, seq, heading, text, line_start, line_end, size_bytes, est_tokens, meta
FROM chunks
WHERE document_id IN (SELECT value FROM json_each(:ids))
  AND (seq = 0
       OR id IN (SELECT value FROM json_each(:chunk_ids))
       OR id IN (
           SELECT f.rowid
           FROM (
               SELECT min(id) AS low, max(id) AS high
               FROM chunks
               WHERE document_id IN (SELECT value FROM json_each(:ids))
               GROUP BY document_id
           ) r
           JOIN chunks_fts f ON f.rowid BETWEEN r.low AND r.high
           WHERE f.chunks_fts MATCH :match
       ))
ORDER BY document_id, seq
