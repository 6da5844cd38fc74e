SELECT id, root_id, kind, size, mtime_ns, sha256 FROM files WHERE path = :path
