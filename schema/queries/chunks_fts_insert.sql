-- A new chunk's entry in chunks_fts (no trigger: see migration 0004).
INSERT INTO chunks_fts (rowid, heading, text) VALUES (:id, :heading, :text)
