-- The chunk ids of some documents (:ids, a JSON array), each document's in reading order.
SELECT c.id, c.document_id
FROM chunks c
WHERE c.document_id IN (SELECT value FROM json_each(:ids))
ORDER BY c.document_id, c.seq
