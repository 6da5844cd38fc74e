-- What the loaded vectors of :model must still match: how many there are and the newest
-- chunk id, and how many chunks the index has and its newest id (a cheap change detector).
SELECT (SELECT count(*) FROM chunk_vectors WHERE model = :model) AS vectors,
       (SELECT max(chunk_id) FROM chunk_vectors WHERE model = :model) AS last_vector,
       (SELECT count(*) FROM chunks) AS chunks,
       (SELECT max(id) FROM chunks) AS last_chunk
