-- What `memdex status` says of secrets: how many were masked of each kind, in how many
-- documents.
SELECT kind, sum(count) AS masked, count(DISTINCT document_id) AS documents
FROM secrets_masked
GROUP BY kind
ORDER BY masked DESC, kind
