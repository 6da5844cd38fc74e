-- A query of dates alone: every document dated in its period, newest first (ties: the one
-- indexed last first). The period is in the filter parameters -- :years and :months from
-- month and year words, :since and :until from relative dates and --since/--until -- with
-- every other filter.
SELECT d.id AS document_id, d.date
FROM documents d
WHERE d.date IS NOT NULL
  AND {{document_filter}}
ORDER BY d.date DESC, d.id DESC
