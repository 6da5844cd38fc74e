UPDATE files SET root_id = :root_id, rel_path = :rel_path, kind = :kind, size = :size,
    mtime_ns = :mtime_ns, sha256 = :sha256, indexed_at = :now, deleted_at = NULL
WHERE id = :id
