-- Every root with what it holds: files and documents, problems recorded (files that could
-- not be read, records skipped inside indexed files), and its files per kind as a JSON
-- object ({"memory": 2, "note": 3}); whether it keeps deleted files' documents (NULL: as
-- their kind says) and how many it keeps. `memdex roots` and `memdex status` list them.
SELECT r.id, r.path, r.kind, r.detected_kind, r.scope, r.chunk_tokens, r.added_at, r.indexed_at,
    r.ingest_version,
    (SELECT count(*) FROM files f WHERE f.root_id = r.id) AS files,
    (SELECT count(*) FROM documents d JOIN files f ON f.id = d.file_id WHERE f.root_id = r.id)
        AS documents,
    r.keep_deleted, r.keep_secrets,
    (SELECT count(*) FROM documents d JOIN files f ON f.id = d.file_id
        WHERE f.root_id = r.id AND f.deleted_at IS NOT NULL) AS source_deleted,
    (SELECT count(*) FROM ingest_errors e WHERE e.root_id = r.id)
        + (SELECT count(*) FROM record_errors x JOIN files f ON f.id = x.file_id WHERE f.root_id = r.id)
        AS errors,
    (SELECT json_group_object(kind, n) FROM (
        SELECT f.kind, count(*) AS n FROM files f WHERE f.root_id = r.id GROUP BY f.kind ORDER BY f.kind
    )) AS holds
FROM roots r
ORDER BY r.path
