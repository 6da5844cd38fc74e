INSERT INTO chunks (document_id, seq, heading, text, line_start, line_end, size_bytes, est_tokens, meta)
VALUES (:document_id, :seq, :heading, :text, :line_start, :line_end, :size_bytes, :est_tokens, :meta)
