-- Indexed files whose name (the last part of the path) is :name: the candidates for a path
-- given another way -- through a symlink, or resolved where the index holds it through one.
-- The caller compares each one's resolved path with the path asked for.
SELECT f.path
FROM files f
WHERE f.path = :name OR substr(f.path, -length(:name) - 1) = '/' || :name
LIMIT 200
