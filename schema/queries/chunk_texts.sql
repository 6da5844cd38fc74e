-- The text of some chunks (:ids, a JSON array), in document order.
SELECT text FROM chunks WHERE id IN (SELECT value FROM json_each(:ids)) ORDER BY document_id, seq
