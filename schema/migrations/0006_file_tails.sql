-- memdex schema, migration 0006: session logs are read on from where they stopped.
-- A coding agent's session log (Claude Code, Codex) only grows while the session runs. For
-- each such file: how far it was read (the end of its last complete line, and how many lines
-- that is), its size when it was last read whole, the SHA-256 of the 4 KB before `offset`
-- (the indexed prefix is unchanged when they still hash the same), and the reader's state to
-- go on from there (JSON). When the prefix changed, the file is read whole again.
CREATE TABLE file_tails (
    file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
    offset INTEGER NOT NULL,
    lines INTEGER NOT NULL,
    whole_size INTEGER NOT NULL,
    tail_sha TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT '{}'
);
