SELECT path, reason, size, mtime_ns FROM ingest_errors WHERE root_id = :root_id
