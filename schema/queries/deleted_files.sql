-- Files gone whose documents are kept (files.deleted_at), of every root or of :root_id, with
-- what they hold: what `memdex roots purge-deleted` drops.
SELECT f.id, f.path, f.deleted_at,
    (SELECT count(*) FROM documents d WHERE d.file_id = f.id) AS documents,
    (SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id WHERE d.file_id = f.id)
        AS chunks
FROM files f
WHERE f.deleted_at IS NOT NULL AND (:root_id IS NULL OR f.root_id = :root_id)
ORDER BY f.path
