DELETE FROM ingest_errors WHERE path = :path
