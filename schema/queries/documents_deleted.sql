-- Of these documents (:ids, a JSON array), those whose file was deleted and which are kept,
-- with the date memdex noticed.
SELECT d.id, f.deleted_at
FROM documents d JOIN files f ON f.id = d.file_id
WHERE d.id IN (SELECT value FROM json_each(:ids)) AND f.deleted_at IS NOT NULL
