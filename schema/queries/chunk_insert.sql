-- A chunk, with the id the writer gives it (the next of the chunks sequence), so its
-- chunks_fts entry can be written in the same batch.
INSERT INTO chunks (id, document_id, seq, heading, text, line_start, line_end, size_bytes, est_tokens, meta)
VALUES (:id, :document_id, :seq, :heading, :text, :line_start, :line_end, :size_bytes, :est_tokens, :meta)
