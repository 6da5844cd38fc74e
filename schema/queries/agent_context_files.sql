-- Memories and notes whose files live in a folder (:project, an absolute path), newest first:
-- a repository's own .serena/memories, docs or notes, when they are indexed. Agent sessions
-- (:kinds) are listed apart (agent_context_sessions.sql). The path range ('/' < '0') reads
-- the files' unique index on path.
SELECT d.id, d.kind, d.key, d.title, {{document_date}} AS date, f.path
FROM files f JOIN documents d ON d.file_id = f.id
WHERE f.path > :project || '/' AND f.path < :project || '0'
  AND d.kind NOT IN (SELECT value FROM json_each(:kinds))
ORDER BY date DESC, d.id DESC
LIMIT :limit
