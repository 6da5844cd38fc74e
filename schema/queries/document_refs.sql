-- Documents a reference names: a source file's path, or a natural key (frontmatter id,
-- Serena memory name, conversation id). At most a few rows; the caller says which matched.
SELECT d.id, d.key, d.title, f.path
FROM documents d JOIN files f ON f.id = d.file_id
WHERE f.path = :ref OR d.key = :ref
ORDER BY f.path = :ref DESC, d.copy_of IS NOT NULL, d.id
LIMIT 20
