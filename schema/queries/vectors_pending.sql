-- Is there anything for vectors of :model to do after the words: a chunk with no vector of it,
-- or a vector whose chunk is gone? (query.meaning, _nothing_new: `memdex index` that finds
-- nothing new answers without loading numpy or the model.)
SELECT EXISTS (
    SELECT 1 FROM chunks c
    WHERE NOT EXISTS (SELECT 1 FROM chunk_vectors v WHERE v.chunk_id = c.id AND v.model = :model)
) OR EXISTS (
    SELECT 1 FROM chunk_vectors v WHERE NOT EXISTS (SELECT 1 FROM chunks c WHERE c.id = v.chunk_id)
)
