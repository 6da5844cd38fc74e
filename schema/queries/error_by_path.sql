SELECT path, reason, size, mtime_ns FROM ingest_errors WHERE path = :path
