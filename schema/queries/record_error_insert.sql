INSERT INTO record_errors (file_id, record, reason) VALUES (:file_id, :record, :reason)
