-- Same bytes, new stat (touched, or copied back): remember the stat, keep the documents.
-- A deleted file that came back is there again: its mark goes.
UPDATE files SET size = :size, mtime_ns = :mtime_ns, deleted_at = NULL WHERE id = :id
