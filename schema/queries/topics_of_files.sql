-- The documents of some files (:paths, a JSON array) with their topic rows in insertion
-- order; a document with no topics left comes once, with topic NULL.
SELECT d.id AS document_id, t.topic FROM documents d
JOIN files f ON f.id = d.file_id
LEFT JOIN topics t ON t.document_id = d.id
WHERE f.path IN (SELECT value FROM json_each(:paths))
ORDER BY d.id, t.id
