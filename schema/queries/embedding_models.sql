-- The models this index has vectors of, newest first, with how many chunks each covers.
SELECT m.name, m.dim, m.source, m.updated_at,
       (SELECT count(*) FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id WHERE v.model = m.name) AS vectors
FROM embedding_models m
ORDER BY m.updated_at DESC, m.name
