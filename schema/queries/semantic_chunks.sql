-- The nearest chunks (:ids, a JSON array of chunk ids, nearest first) that pass the search's
-- filters, with their documents, in the same order. A document with a platform (chatgpt,
-- claude, gemini...) is a conversation.
SELECT c.id AS chunk_id, c.document_id, d.platform IS NOT NULL AS conversation, j.key AS rank
FROM json_each(:ids) AS j
JOIN chunks c ON c.id = j.value
JOIN documents d ON d.id = c.document_id
WHERE {{document_filter}}
ORDER BY j.key
