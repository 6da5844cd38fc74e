DELETE FROM file_tails WHERE file_id = :file_id
