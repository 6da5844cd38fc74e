-- Take a document's whole text out of bodies_fts (as the documents_bd_bodies trigger does),
-- before chunks are added to it; document_body_rebuild puts the new text back.
INSERT INTO bodies_fts (bodies_fts, rowid, body)
SELECT 'delete', :document_id, group_concat(heading || char(10) || text, char(10))
FROM (SELECT heading, text FROM chunks WHERE document_id = :document_id ORDER BY seq)
HAVING count(*) > 0
