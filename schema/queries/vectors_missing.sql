-- Chunks with no vector for :model yet, :limit at a time: what `memdex embed` has left to do.
-- Newest documents first -- by their own date, else their file's modification time -- so what
-- was written lately is found by meaning first. Each batch's vectors are committed before the
-- next is asked for. The text embedded is the heading path and the chunk's text.
SELECT c.id, c.heading, c.text
FROM chunks c
JOIN documents d ON d.id = c.document_id
JOIN files f ON f.id = d.file_id
WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id AND v.model = :model)
ORDER BY coalesce(d.date, strftime('%Y-%m-%dT%H:%M:%S', f.mtime_ns / 1000000000, 'unixepoch')) DESC, c.id
LIMIT :limit
