-- The size of :name's vectors (NULL row when the index has none of it).
SELECT dim FROM embedding_models WHERE name = :name
