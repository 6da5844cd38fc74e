-- Chunks read from a file of their own (a chat archive's condensed chunk files: meta.file,
-- relative to the archive's folder) whose file is one of :names (a JSON array of the path's
-- trailing parts: x.md, chunks/x.md, ...). The caller keeps those whose file, joined to the
-- folder of the document's source file, is the path asked for.
SELECT c.id, c.document_id, json_extract(c.meta, '$.file') AS file, f.path
FROM chunks c
JOIN documents d ON d.id = c.document_id
JOIN files f ON f.id = d.file_id
WHERE json_extract(c.meta, '$.file') IN (SELECT value FROM json_each(:names))
LIMIT 200
