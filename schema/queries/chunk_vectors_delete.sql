-- A chunk's vectors, made from text it no longer holds (a secret masked in place): memdex
-- embed makes them again.
DELETE FROM chunk_vectors WHERE chunk_id = :id
