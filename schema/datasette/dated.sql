-- title: Dated: what a date range holds
-- description: Documents dated from since to until (YYYY, YYYY-MM or YYYY-MM-DD, inclusive; leave either empty for no bound), newest first, each with where its date came from. What `memdex search` lists for a query of dates alone, such as "October" or "last week". A document with no date of its own is dated by its file's modification time (date_source mtime: dated by file time).
SELECT
    d.id AS document_id,
    coalesce(d.date, strftime('%Y-%m-%dT%H:%M:%SZ', f.mtime_ns / 1000000000, 'unixepoch')) AS date,
    CASE WHEN d.date IS NULL THEN 'mtime' ELSE d.date_source END AS date_source,
    d.title,
    d.kind,
    d.namespace,
    d.platform,
    d.est_tokens,
    f.path
FROM documents d JOIN files f ON f.id = d.file_id
WHERE (coalesce(:since, '') = '' OR coalesce(d.date, strftime('%Y-%m-%dT%H:%M:%SZ', f.mtime_ns / 1000000000, 'unixepoch')) >= :since)
  AND (coalesce(:until, '') = '' OR substr(coalesce(d.date, strftime('%Y-%m-%dT%H:%M:%SZ', f.mtime_ns / 1000000000, 'unixepoch')), 1, length(:until)) <= :until)
ORDER BY 2 DESC, d.id DESC
LIMIT 1000
