-- Ingest state of every file of a root: compared with a stat to find what changed.
SELECT id, path, kind, size, mtime_ns, sha256, deleted_at FROM files WHERE root_id = :root_id
