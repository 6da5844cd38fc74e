-- A new document's entry in documents_fts (no trigger: see migration 0004).
INSERT INTO documents_fts (rowid, title, description, tags, topics)
VALUES (:id, :title, :description, :tags, :topics)
