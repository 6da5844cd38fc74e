INSERT INTO files (root_id, path, rel_path, kind, size, mtime_ns, sha256, indexed_at)
VALUES (:root_id, :path, :rel_path, :kind, :size, :mtime_ns, :sha256, :now)
