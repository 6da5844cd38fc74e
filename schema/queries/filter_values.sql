-- The values one filter (:field: namespace, type, platform, project or branch) has in this
-- index, with how many documents have each: what a filter value that matches nothing is told
-- the index holds.
SELECT value, count(*) AS documents FROM (
    SELECT CASE :field
        WHEN 'namespace' THEN namespace
        WHEN 'type' THEN type
        WHEN 'platform' THEN platform
        WHEN 'project' THEN json_extract(meta, '$.project')
        WHEN 'branch' THEN json_extract(meta, '$.branch')
    END AS value
    FROM documents
)
WHERE value IS NOT NULL
GROUP BY value
