SELECT id, root_id, path, kind, size, mtime_ns, sha256, deleted_at FROM files WHERE path = :path
