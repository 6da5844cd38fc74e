INSERT INTO topics (document_id, topic, source, source_file_id, line)
VALUES (:document_id, :topic, :source, :source_file_id, :line)
