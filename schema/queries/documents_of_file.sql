SELECT id, key FROM documents WHERE file_id = :file_id
