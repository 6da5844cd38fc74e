-- A query of dates alone: every document dated in its period, newest first (ties: the one
-- indexed last first). The period is in the filter parameters -- :years and :months from
-- month and year words, :since and :until from relative dates and --since/--until -- with
-- every other filter. A document with no date of its own is dated by its file's modification
-- time (document_date.sql); by_mtime says which, so the listing can count them.
SELECT d.id AS document_id, {{document_date}} AS date, d.date IS NULL AS by_mtime
FROM documents d
WHERE {{document_filter}}
ORDER BY 2 DESC, d.id DESC
