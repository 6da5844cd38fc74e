-- Index a document's whole text once its chunks are written (deletion is a trigger). The
-- writer builds the text exactly as the document_bodies view does: each chunk's heading and
-- text, in order, joined by newlines.
INSERT INTO bodies_fts (rowid, body) VALUES (:document_id, :body)
