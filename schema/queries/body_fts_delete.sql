-- Take a document's whole text out of bodies_fts, with the tokens it was given (as the
-- documents_bd_bodies trigger does): before its chunks are masked in place.
INSERT INTO bodies_fts (bodies_fts, rowid, body)
SELECT 'delete', :document_id, group_concat(memdex_words(heading) || ' ' || memdex_words(text), ' ')
FROM (SELECT heading, text FROM chunks WHERE document_id = :document_id ORDER BY seq)
HAVING count(*) > 0
