-- Recompute the index-derived topics of the documents of some files (:paths, a JSON array of
-- absolute paths) after the index rows pointing at them changed; then their topics column.
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
JOIN json_each(l.keywords) kw;

UPDATE documents SET topics = (
    SELECT json_group_array(topic) FROM (
        SELECT min(topic) AS topic FROM topics WHERE document_id = documents.id
        GROUP BY lower(topic) ORDER BY min(id)
    )
)
WHERE file_id IN (SELECT id FROM files WHERE path IN (SELECT value FROM json_each(:paths)));
