-- The last chunks of a document (:id), last first: where a session's latest decisions and
-- open threads are.
SELECT c.seq, c.text
FROM chunks c
WHERE c.document_id = :id
ORDER BY c.seq DESC
LIMIT :limit
