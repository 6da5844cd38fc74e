-- How much is indexed: one row of totals.
SELECT
    (SELECT count(*) FROM roots) AS roots,
    (SELECT count(*) FROM files) AS files,
    (SELECT count(*) FROM documents) AS documents,
    (SELECT count(*) FROM chunks) AS chunks,
    (SELECT count(*) FROM topics) AS topics,
    (SELECT count(*) FROM index_links) AS index_links,
    (SELECT count(*) FROM synonyms) AS synonyms,
    (SELECT count(*) FROM ingest_errors) AS errors,
    (SELECT coalesce(sum(size_bytes), 0) FROM documents) AS size_bytes,
    (SELECT coalesce(sum(est_tokens), 0) FROM documents) AS est_tokens
