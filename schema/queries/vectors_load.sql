-- Every vector of :model whose chunk is still in the index, with the chunk's document (what
-- the filters of a search choose by), for the nearest-neighbour search. A chunk embedded in
-- windows has their vectors one after another in `vector`.
SELECT v.chunk_id, c.document_id, v.vector
FROM chunk_vectors v
JOIN chunks c ON c.id = v.chunk_id
WHERE v.model = :model
ORDER BY v.chunk_id
