-- Memories and notes whose files live in a folder (:project, an absolute path), newest first:
-- a repository's own .serena/memories, docs or notes, when they are indexed. Agent sessions
-- (a platform and a project) are listed apart (agent_context_sessions.sql). The path range
-- ('/' < '0') reads the files' unique index on path.
SELECT d.id, d.kind, d.key, d.title, {{document_date}} AS date, f.path
FROM files f JOIN documents d ON d.file_id = f.id
WHERE f.path > :project || '/' AND f.path < :project || '0'
  AND (d.platform IS NULL OR json_extract(d.meta, '$.project') IS NULL)
ORDER BY date DESC, d.id DESC
LIMIT :limit
