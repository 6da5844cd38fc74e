-- `memdex embed --drop`: every vector of :model, or of every model when :model is NULL.
DELETE FROM chunk_vectors WHERE :model IS NULL OR model = :model
