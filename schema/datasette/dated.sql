-- title: Dated: what a date range holds
-- description: Documents dated from since to until (YYYY, YYYY-MM or YYYY-MM-DD, inclusive; leave either empty for no bound), newest first, each with where its date came from. What `memdex search` lists for a query of dates alone, such as "October" or "last week". Documents with no date of their own are not listed.
SELECT
    d.id AS document_id,
    d.date,
    d.date_source,
    d.title,
    d.kind,
    d.namespace,
    d.platform,
    d.est_tokens,
    f.path
FROM documents d JOIN files f ON f.id = d.file_id
WHERE d.date IS NOT NULL
  AND (coalesce(:since, '') = '' OR d.date >= :since)
  AND (coalesce(:until, '') = '' OR substr(d.date, 1, length(:until)) <= :until)
ORDER BY d.date DESC, d.id DESC
LIMIT 1000
