SELECT id FROM documents WHERE file_id = :file_id AND key = :key
