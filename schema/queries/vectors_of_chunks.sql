-- The vectors of :model of the chunks :ids (a JSON array): those a matrix made again lacks.
SELECT chunk_id, vector
FROM chunk_vectors
WHERE model = :model AND chunk_id IN (SELECT value FROM json_each(:ids))
