SELECT record, reason FROM record_errors WHERE file_id = :file_id ORDER BY id
