-- The nearest chunks (:ids, a JSON array of chunk ids, nearest first) that pass the search's
-- filters, with their documents, in the same order.
SELECT c.id AS chunk_id, c.document_id, d.kind, j.key AS rank
FROM json_each(:ids) AS j
JOIN chunks c ON c.id = j.value
JOIN documents d ON d.id = c.document_id
WHERE {{document_filter}}
ORDER BY j.key
