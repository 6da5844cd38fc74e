-- One document by id, with the file it came from (memdex show, MCP get_document), when
-- memdex noticed that file was deleted, if it was and the document is kept, and whether its
-- root keeps secrets (else what is read from its file is masked as the index is).
SELECT d.id, d.key, d.kind, d.title, d.date, d.namespace, d.platform, d.size_bytes, d.est_tokens,
    f.path, f.sha256, f.deleted_at, coalesce(r.keep_secrets, 0) AS keep_secrets
FROM documents d JOIN files f ON f.id = d.file_id JOIN roots r ON r.id = f.root_id
WHERE d.id = :id
