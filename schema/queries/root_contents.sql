-- What a root holds, counted: what `memdex roots remove` says it will remove, and removed.
-- Problems are files that could not be read and records skipped inside indexed files.
SELECT
    (SELECT count(*) FROM files f WHERE f.root_id = :root_id) AS files,
    (SELECT count(*) FROM documents d JOIN files f ON f.id = d.file_id
        WHERE f.root_id = :root_id) AS documents,
    (SELECT count(*) FROM chunks c JOIN documents d ON d.id = c.document_id
        JOIN files f ON f.id = d.file_id WHERE f.root_id = :root_id) AS chunks,
    (SELECT count(*) FROM chunk_vectors v JOIN chunks c ON c.id = v.chunk_id
        JOIN documents d ON d.id = c.document_id JOIN files f ON f.id = d.file_id
        WHERE f.root_id = :root_id) AS vectors,
    (SELECT count(*) FROM ingest_errors e WHERE e.root_id = :root_id)
        + (SELECT count(*) FROM record_errors r JOIN files f ON f.id = r.file_id
            WHERE f.root_id = :root_id) AS errors
