DELETE FROM documents WHERE file_id = :file_id
