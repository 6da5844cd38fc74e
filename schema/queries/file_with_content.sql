-- Is this content (SHA-256) indexed at a path that is still there, other than this file's?
-- A file gone whose bytes are found so was moved, not deleted.
SELECT 1 FROM files WHERE sha256 = :sha256 AND id != :id AND deleted_at IS NULL LIMIT 1
