-- A new chunk's entry in chunks_fts (no trigger: see migration 0004): its heading's and text's
-- tokens, made by the writer (memdex.tokens.index_text, as the chunk_words view makes them).
INSERT INTO chunks_fts (rowid, heading, text) VALUES (:id, :heading_words, :text_words)
