-- What vectors_load.sql reads, without the vectors: each chunk's document and its vector's
-- scale (vectors.row_key), so a matrix made again reads only the vectors that changed.
SELECT v.chunk_id, c.document_id, v.scale
FROM chunk_vectors v
JOIN chunks c ON c.id = v.chunk_id
WHERE +v.model = :model
ORDER BY v.chunk_id
