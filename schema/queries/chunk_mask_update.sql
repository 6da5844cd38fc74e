-- A chunk with its secrets masked (chunks_au keeps chunks_fts current).
UPDATE chunks SET heading = :heading, text = :text, size_bytes = :size_bytes,
    est_tokens = :est_tokens, meta = :meta
WHERE id = :id
