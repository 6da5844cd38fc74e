-- memdex schema, migration 0008: notes with a broken frontmatter block are read again.
-- A note (any markdown that is not a *.memory.md) whose frontmatter does not parse is now
-- indexed as text, with the block reported (issue 26); before, the whole file was skipped and
-- its stat recorded here, so it would not be read again until it changed. Forgetting that stat
-- makes the next `memdex index` (or watcher catch-up) read each such file once more: a note is
-- then indexed, and a memory or a Serena file reports the same error again.
UPDATE ingest_errors SET size = NULL, mtime_ns = NULL
WHERE reason LIKE 'broken YAML frontmatter%'
   OR reason LIKE 'frontmatter starts with --- but has no closing --- line%';
