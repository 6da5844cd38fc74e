-- Recorded errors at a path or under it.
SELECT path FROM ingest_errors
WHERE path = :path OR (path >= :path || '/' AND path < :path || '0')
