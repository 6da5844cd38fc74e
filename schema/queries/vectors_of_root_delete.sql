-- The vectors of a root's chunks, before the root is forgotten: a vector has no foreign key
-- (it may outlive its chunk for `memdex embed` to reuse), so nothing else would remove them.
DELETE FROM chunk_vectors WHERE chunk_id IN (
    SELECT c.id FROM chunks c
    JOIN documents d ON d.id = c.document_id
    JOIN files f ON f.id = d.file_id
    WHERE f.root_id = :root_id
)
