-- The files at a path or under it (a folder that changed or went away). '0' is the character
-- after '/', so the range is exactly the paths below the folder, using the path index.
SELECT id, path, kind, size, mtime_ns, sha256, deleted_at FROM files
WHERE path = :path OR (path >= :path || '/' AND path < :path || '0')
