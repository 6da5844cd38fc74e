-- The document with a key in a file: what a location's path#key names (a chat export's
-- conversation). Keys are unique within a file.
SELECT d.id
FROM documents d JOIN files f ON f.id = d.file_id
WHERE f.path = :path AND d.key = :key
