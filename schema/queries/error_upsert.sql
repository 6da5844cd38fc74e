INSERT INTO ingest_errors (path, root_id, reason, size, mtime_ns, first_seen, last_seen)
VALUES (:path, :root_id, :reason, :size, :mtime_ns, :now, :now)
ON CONFLICT (path) DO UPDATE SET
    root_id = excluded.root_id, reason = excluded.reason, size = excluded.size,
    mtime_ns = excluded.mtime_ns, last_seen = excluded.last_seen
