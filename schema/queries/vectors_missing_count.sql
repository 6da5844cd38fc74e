-- How many chunks have no vector for :model.
SELECT count(*) FROM chunks c
WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id AND v.model = :model)
