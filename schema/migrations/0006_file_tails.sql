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

-- A document that grows (a session) is ranked by its chunks, not as one whole text: putting
-- its whole text into bodies_fts again after every appended line would cost the size of the
-- session, not of the line. whole_text = 0 keeps it out of the view and so of the index.
ALTER TABLE documents ADD COLUMN whole_text INTEGER NOT NULL DEFAULT 1;

DROP TRIGGER documents_bd_bodies;
DROP VIEW document_bodies;
CREATE VIEW document_bodies AS
SELECT document_id AS id, group_concat(heading || char(10) || text, char(10)) AS body
FROM (
    SELECT c.document_id, c.heading, c.text
    FROM chunks c JOIN documents d ON d.id = c.document_id
    WHERE d.whole_text
    ORDER BY c.document_id, c.seq
)
GROUP BY document_id;

CREATE TRIGGER documents_bd_bodies BEFORE DELETE ON documents WHEN old.whole_text BEGIN
    INSERT INTO bodies_fts (bodies_fts, rowid, body)
    SELECT 'delete', old.id, group_concat(heading || char(10) || text, char(10))
    FROM (SELECT heading, text FROM chunks WHERE document_id = old.id ORDER BY seq)
    HAVING count(*) > 0;
END;
