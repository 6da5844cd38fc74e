-- The agent sessions run in a folder or under it (:project, an absolute path), newest first:
-- what memdex's session-start context lists (memdex/agents/context.py). :kinds is a JSON
-- array of the session kinds; the meta's project is the folder the agent ran in.
SELECT d.id, d.kind, d.key, d.title, d.platform, {{document_date}} AS date,
       json_extract(d.meta, '$.project') AS project,
       json_extract(d.meta, '$.branch') AS branch,
       json_extract(d.meta, '$.message_count') AS message_count
FROM documents d
WHERE d.kind IN (SELECT value FROM json_each(:kinds))
  AND (json_extract(d.meta, '$.project') = :project
       OR substr(json_extract(d.meta, '$.project'), 1, length(:project) + 1) = :project || '/')
ORDER BY date DESC, d.id DESC
LIMIT :limit
