INSERT INTO index_links (file_id, line, keywords, target, label)
VALUES (:file_id, :line, :keywords, :target, :label)
