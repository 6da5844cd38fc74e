-- One chunk's vector for one model.
INSERT OR REPLACE INTO chunk_vectors (chunk_id, model, text_hash, scale, vector)
VALUES (:chunk_id, :model, :text_hash, :scale, :vector)
