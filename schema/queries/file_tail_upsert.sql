INSERT INTO file_tails (file_id, offset, lines, whole_size, tail_sha, state)
VALUES (:file_id, :offset, :lines, :whole_size, :tail_sha, :state)
ON CONFLICT (file_id) DO UPDATE SET
    offset = excluded.offset, lines = excluded.lines, whole_size = excluded.whole_size,
    tail_sha = excluded.tail_sha, state = excluded.state
