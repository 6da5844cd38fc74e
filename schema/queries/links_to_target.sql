-- Index rows pointing at a file: their keywords become its topics (in this order).
SELECT file_id, line, keywords FROM index_links WHERE target = :target ORDER BY file_id, line
