-- A short extract of one chunk around the words of :match, the matches marked.
SELECT snippet(chunks_fts, 1, :open, :close, '…', 24) AS snippet
FROM chunks_fts
WHERE chunks_fts MATCH :match AND rowid = :chunk_id
