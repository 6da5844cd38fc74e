SELECT id, path, kind, detected_kind, scope, chunk_tokens, keep_deleted, keep_secrets, added_at, indexed_at,
    ingest_version,
    (SELECT count(*) FROM files WHERE files.root_id = roots.id) AS files,
    (SELECT count(*) FROM documents JOIN files ON files.id = documents.file_id
        WHERE files.root_id = roots.id) AS documents
FROM roots
ORDER BY path
