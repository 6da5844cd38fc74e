-- Vectors whose chunk is gone (its file changed or was removed), once `memdex embed` has
-- had the chance to reuse them for the same text under a new id.
DELETE FROM chunk_vectors WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = chunk_vectors.chunk_id)
