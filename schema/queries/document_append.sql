-- A session log read on: its document's fields grow (size) or move on (dates, title, meta);
-- the documents_au trigger re-indexes the title. Its new chunks are inserted beside.
UPDATE documents SET
    title = :title, platform = :platform, date = :date,
    created = coalesce(created, :created), modified = :modified,
    size_bytes = size_bytes + :added_bytes, est_tokens = (size_bytes + :added_bytes + 3) / 4,
    meta = :meta
WHERE id = :id
RETURNING id, (SELECT coalesce(max(seq), -1) + 1 FROM chunks WHERE document_id = :id) AS next_seq
