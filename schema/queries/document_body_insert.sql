-- Index a document's whole text once its chunks are written (deletion is a trigger). The
-- text is built exactly as the document_bodies view builds it, from this document's chunks.
INSERT INTO bodies_fts (rowid, body)
SELECT :document_id, group_concat(heading || char(10) || text, char(10))
FROM (SELECT heading, text FROM chunks WHERE document_id = :document_id ORDER BY seq)
HAVING count(*) > 0
