-- The agent sessions run in a folder or under it (:project, an absolute path), newest first:
-- what memdex's session-start context lists (memdex/agents/context.py). A session is a
-- conversation (it has a platform) whose meta names the folder the agent ran in (project);
-- asked this way, the hook loads no kind of the registry.
SELECT d.id, d.kind, d.key, d.title, d.platform, {{document_date}} AS date,
       json_extract(d.meta, '$.project') AS project,
       json_extract(d.meta, '$.branch') AS branch,
       json_extract(d.meta, '$.message_count') AS message_count
FROM documents d
WHERE d.platform IS NOT NULL AND d.copy_of IS NULL  -- a session copied under another root: once
  AND (json_extract(d.meta, '$.project') = :project
       OR substr(json_extract(d.meta, '$.project'), 1, length(:project) + 1) = :project || '/')
ORDER BY date DESC, d.id DESC
LIMIT :limit
