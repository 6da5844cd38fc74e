-- Put a document's whole text back into bodies_fts, from its chunks as they are now.
INSERT INTO bodies_fts (rowid, body)
SELECT :document_id, group_concat(memdex_words(heading) || ' ' || memdex_words(text), ' ')
FROM (SELECT heading, text FROM chunks WHERE document_id = :document_id ORDER BY seq)
HAVING count(*) > 0
