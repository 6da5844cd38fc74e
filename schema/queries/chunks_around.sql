-- Some chunks (:ids, a JSON array) and the chunk just before and just after each in its
-- document, in document order: a window of messages may reach across a chunk's edge
-- (query.windows). Looked up by (document_id, seq), never by scanning chunks.
SELECT c.id, c.document_id, c.seq, c.heading, c.text, c.line_start, c.line_end, c.size_bytes,
       c.est_tokens, c.meta
FROM (
    SELECT DISTINCT p.document_id, p.seq + d.value AS seq
    FROM chunks p, json_each('[-1, 0, 1]') d
    WHERE p.id IN (SELECT value FROM json_each(:ids))
) w
JOIN chunks c ON c.document_id = w.document_id AND c.seq = w.seq
ORDER BY c.document_id, c.seq
