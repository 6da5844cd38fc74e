-- Index a document's whole text once its chunks are written (deletion is a trigger). The
-- writer hands the tokens of the text the document_bodies view joins (each chunk's heading
-- and text, in order), as the body_words view makes them.
INSERT INTO bodies_fts (rowid, body) VALUES (:document_id, :body)
