-- Every vector of :model whose chunk is still in the index, with the chunk's document (what
-- the filters of a search choose by), for the nearest-neighbour search. A chunk embedded in
-- windows has their vectors one after another in `vector`; its scale is the row's key
-- (vectors.row_key): a matrix made again later copies the rows whose key is unchanged.
-- `+v.model`: a scan of the table, in chunk id order already, not a search of the model's
-- rows by chunk_vectors_hash and a sort (0.38 -> 0.23 s at 100,000 vectors).
SELECT v.chunk_id, c.document_id, v.scale, v.vector
FROM chunk_vectors v
JOIN chunks c ON c.id = v.chunk_id
WHERE +v.model = :model
ORDER BY v.chunk_id
