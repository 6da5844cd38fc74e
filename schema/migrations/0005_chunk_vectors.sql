-- memdex schema, migration 0005: search by meaning. `memdex embed` stores one vector per
-- chunk and embedding model, made from the chunk's heading path and text; text_hash is the
-- SHA-1 of exactly what was embedded, so a chunk whose text changed is embedded again and a
-- chunk re-written unchanged (a file edited elsewhere gets new chunk ids) reuses its vector.
-- Vectors are int8, one signed byte per dimension, times `scale`: a quarter of float32's
-- bytes; cosine to the float32 vector stays above 0.999.
-- No foreign key to chunks: a vector outlives its chunk until `memdex embed` collects it, so
-- that an unchanged text written under a new id finds its old vector. Readers join chunks.
CREATE TABLE chunk_vectors (
    chunk_id INTEGER NOT NULL,
    model TEXT NOT NULL,               -- embedding_models.name
    text_hash TEXT NOT NULL,
    scale REAL NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (chunk_id, model)
) WITHOUT ROWID;
CREATE INDEX chunk_vectors_hash ON chunk_vectors(model, text_hash);

-- The embedding models an index has vectors of: a name that changes with the model's files,
-- the size of its vectors, where it was loaded from, and when vectors were last written.
CREATE TABLE embedding_models (
    name TEXT PRIMARY KEY,
    dim INTEGER NOT NULL,
    source TEXT NOT NULL,
    updated_at TEXT NOT NULL
);
