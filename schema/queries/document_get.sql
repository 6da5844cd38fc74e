-- One document by id, with the file it came from (memdex show, MCP get_document).
SELECT d.id, d.key, d.kind, d.title, d.date, d.namespace, d.platform, d.size_bytes, d.est_tokens,
    f.path, f.sha256
FROM documents d JOIN files f ON f.id = d.file_id
WHERE d.id = :id
