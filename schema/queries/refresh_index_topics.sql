-- Replace the index-derived topics of the documents of some files (:paths, a JSON array of
-- absolute paths) after the index rows pointing at them changed. Rows go in in a fixed order
-- (index file, line, keyword) so a document's topics read the same however they were made;
-- the caller then rewrites the documents' topics column from these rows.
DELETE FROM topics
WHERE source = 'index'
  AND document_id IN (
    SELECT d.id FROM documents d JOIN files f ON f.id = d.file_id
    WHERE f.path IN (SELECT value FROM json_each(:paths))
  );

INSERT INTO topics (document_id, topic, source, source_file_id, line)
SELECT d.id, kw.value, 'index', l.file_id, l.line
FROM json_each(:paths) p
JOIN files f ON f.path = p.value
JOIN documents d ON d.file_id = f.id
JOIN index_links l ON l.target = f.path
JOIN json_each(l.keywords) kw
ORDER BY d.id, l.file_id, l.line, kw.key;
