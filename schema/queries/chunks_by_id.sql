-- Some chunks (:ids, a JSON array) with what a passage shows of them.
SELECT id, document_id, seq, heading, text, line_start, line_end, size_bytes, est_tokens, meta
FROM chunks
WHERE id IN (SELECT value FROM json_each(:ids))
