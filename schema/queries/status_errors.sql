-- Files that could not be indexed, newest first.
SELECT path, reason, first_seen, last_seen FROM ingest_errors ORDER BY last_seen DESC, path
