-- Mark the copies of each agent session (migration 0012): of the documents of one session
-- kind (:kinds, a JSON array) with one key, the one kept is the one whose file is still
-- there, then the longest (a copy stops growing where it was taken; the live log goes on),
-- then the first indexed; the others name it in copy_of. Only rows whose mark changes are
-- written.
UPDATE documents SET copy_of = marked.kept
FROM (
    SELECT id, CASE WHEN kept = id THEN NULL ELSE kept END AS kept
    FROM (
        SELECT d.id, first_value(d.id) OVER (
            PARTITION BY d.kind, d.key
            ORDER BY f.deleted_at IS NOT NULL, d.size_bytes DESC, d.id
        ) AS kept
        FROM documents d JOIN files f ON f.id = d.file_id
        WHERE d.kind IN (SELECT value FROM json_each(:kinds)) AND d.key IS NOT NULL
    )
) AS marked
WHERE documents.id = marked.id AND documents.copy_of IS NOT marked.kept
