-- The chunks of some documents (:ids, a JSON array) that can explain a result: those holding
-- a query term (:match, an FTS5 expression), each document's first, and the chunks the
-- search picked (:chunk_ids). A long conversation is not read whole to explain one hit.
SELECT id, document_id, seq, heading, text, line_start, line_end, size_bytes, est_tokens, meta
FROM chunks
WHERE document_id IN (SELECT value FROM json_each(:ids))
  AND (seq = 0
       OR id IN (SELECT value FROM json_each(:chunk_ids))
       OR id IN (SELECT rowid FROM chunks_fts WHERE chunks_fts MATCH :match))
ORDER BY document_id, seq
