DELETE FROM record_errors WHERE file_id = :file_id
