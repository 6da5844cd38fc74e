-- Does the index know the embedding model :name?
SELECT 1 FROM embedding_models WHERE name = :name
