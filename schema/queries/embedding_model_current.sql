-- The model of the index's newest vectors: the one searches by meaning use.
SELECT name, dim, source, updated_at FROM embedding_models ORDER BY updated_at DESC, name LIMIT 1
