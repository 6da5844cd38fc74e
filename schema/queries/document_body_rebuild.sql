-- A document's whole text into bodies_fts, built from its chunks as the document_bodies view.
INSERT INTO bodies_fts (rowid, body)
SELECT :document_id, group_concat(heading || char(10) || text, char(10))
FROM (SELECT heading, text FROM chunks WHERE document_id = :document_id ORDER BY seq)
HAVING count(*) > 0
