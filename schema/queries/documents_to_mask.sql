-- The documents whose stored text is masked in place (store/masking.py): those of roots that
-- do not keep secrets; of one root (:root_id), or of all (:root_id NULL).
SELECT d.id, d.title, d.description, d.tags, d.topics, d.meta, d.whole_text
FROM documents d
JOIN files f ON f.id = d.file_id
JOIN roots r ON r.id = f.root_id
WHERE NOT coalesce(r.keep_secrets, 0) AND (:root_id IS NULL OR r.id = :root_id)
ORDER BY d.id
