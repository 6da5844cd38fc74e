-- Every vector of :model whose chunk is still in the index, for the nearest-neighbour search.
SELECT v.chunk_id, v.scale, v.vector
FROM chunk_vectors v
JOIN chunks c ON c.id = v.chunk_id
WHERE v.model = :model
ORDER BY v.chunk_id
