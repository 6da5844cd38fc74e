-- One document by id, with the file it came from (memdex show, MCP get_document), and when
-- memdex noticed that file was deleted, if it was and the document is kept.
SELECT d.id, d.key, d.kind, d.title, d.date, d.namespace, d.platform, d.size_bytes, d.est_tokens,
    f.path, f.sha256, f.deleted_at
FROM documents d JOIN files f ON f.id = d.file_id
WHERE d.id = :id
