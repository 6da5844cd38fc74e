-- Same bytes, new stat (touched, or copied back): remember the stat, keep the documents.
UPDATE files SET size = :size, mtime_ns = :mtime_ns WHERE id = :id
