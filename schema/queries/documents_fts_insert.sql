-- A new document's entry in documents_fts (no trigger: see migration 0004): the tokens of its
-- fields, made by the writer (memdex.tokens.index_text, as the document_words view makes them).
INSERT INTO documents_fts (rowid, title, description, tags, topics)
VALUES (:id, :title, :description, :tags, :topics)
