-- The chunks of some documents (:ids, a JSON array), in document order.
SELECT id, document_id, seq, heading, text, line_start, line_end, size_bytes, est_tokens, meta
FROM chunks
WHERE document_id IN (SELECT value FROM json_each(:ids))
ORDER BY document_id, seq
