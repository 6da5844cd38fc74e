-- Does the index know the embedding model :name, and where did it last read its files?
SELECT source FROM embedding_models WHERE name = :name
