-- The names of the models this index has vectors of, newest first (no counting).
SELECT name FROM embedding_models ORDER BY updated_at DESC, name
