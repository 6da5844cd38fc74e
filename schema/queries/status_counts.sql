-- How much is indexed: one row of totals. source_deleted: documents kept after their file was
-- deleted (ingest/departures.py).
SELECT
    (SELECT count(*) FROM roots) AS roots,
    (SELECT count(*) FROM files) AS files,
    (SELECT count(*) FROM documents) AS documents,
    (SELECT count(*) FROM documents d JOIN files f ON f.id = d.file_id WHERE f.deleted_at IS NOT NULL)
        AS source_deleted,
    (SELECT count(*) FROM chunks) AS chunks,
    (SELECT count(*) FROM topics) AS topics,
    (SELECT count(*) FROM index_links) AS index_links,
    (SELECT count(*) FROM synonyms) AS synonyms,
    (SELECT count(*) FROM ingest_errors) AS errors,
    (SELECT coalesce(sum(size_bytes), 0) FROM documents) AS size_bytes,
    (SELECT coalesce(sum(est_tokens), 0) FROM documents) AS est_tokens
