-- memdex schema, migration 0009: documents whose file was deleted can be kept (issue 28).
-- Claude Code deletes its session logs after 30 days; the index need not forget them too.
-- roots.keep_deleted: 1 keeps every deleted file's documents (`memdex index --keep-deleted`),
-- 0 keeps none (--no-keep-deleted), NULL (not set) keeps those of session-log kinds (a kind
-- whose traits say session_log: claude-code, codex). Remembered per root.
ALTER TABLE roots ADD COLUMN keep_deleted INTEGER;

-- files.deleted_at: when memdex noticed the file was gone (UTC, ISO 8601); NULL while it is
-- there. A kept file keeps its row, documents, chunks and full-text entries; when a file
-- comes back at the same path it is indexed as any changed file and the mark goes.
ALTER TABLE files ADD COLUMN deleted_at TEXT;
CREATE INDEX files_deleted ON files(root_id) WHERE deleted_at IS NOT NULL;

-- A file gone from one path whose bytes are indexed at another was moved, not deleted: found
-- by its SHA-256 among the files still there.
CREATE INDEX files_sha256 ON files(sha256);
