-- A document's fields with their secrets masked (documents_au keeps documents_fts current).
UPDATE documents SET title = :title, description = :description, tags = :tags, topics = :topics,
    meta = :meta
WHERE id = :id
