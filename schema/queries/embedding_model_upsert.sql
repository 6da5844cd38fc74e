-- The model vectors were just written with: its name, vector size, files, and when.
INSERT INTO embedding_models (name, dim, source, updated_at) VALUES (:name, :dim, :source, :now)
ON CONFLICT (name) DO UPDATE SET dim = excluded.dim, source = excluded.source, updated_at = excluded.updated_at
