-- Where a session log was read to, and the reader's state there (ingest/sessions.py).
SELECT offset, lines, whole_size, tail_sha, state FROM file_tails WHERE file_id = :file_id
