-- Files that could not be indexed, newest first, then records skipped inside indexed files.
SELECT path, reason, first_seen, last_seen FROM ingest_errors
UNION ALL
SELECT f.path || '#' || r.record, r.reason, f.indexed_at, f.indexed_at
FROM record_errors r JOIN files f ON f.id = r.file_id
ORDER BY 4 DESC, 1
