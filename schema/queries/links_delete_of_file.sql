DELETE FROM index_links WHERE file_id = :file_id
