-- Chunks with no vector for :model yet, in id order, :limit at a time: what `memdex embed`
-- has left to do. The text embedded is the heading path and the chunk's text.
SELECT c.id, c.heading, c.text
FROM chunks c
WHERE c.id > :after
  AND NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id AND v.model = :model)
ORDER BY c.id
LIMIT :limit
