-- memdex schema, migration 0012: one agent session kept once, whichever roots lead to it.
-- The same session log can be indexed from two files (a copy or backup of ~/.claude/projects
-- under another root, one machine's sessions synced beside another's): the same kind and
-- session id (the document's key). documents.copy_of names the document kept in its place;
-- NULL for every other document. Set by each index run (session_copies_mark.sql, for the
-- kinds whose files are session logs); every search's filter (document_filter.sql) and the
-- session-start context leave copies out.
ALTER TABLE documents ADD COLUMN copy_of INTEGER;
CREATE INDEX documents_kind_key ON documents(kind, key);
CREATE INDEX documents_copies ON documents(copy_of) WHERE copy_of IS NOT NULL;
-- A copy whose kept document is deleted (its root forgotten, its file purged) is a result
-- again at once, as the next index run would mark it.
CREATE TRIGGER documents_ad_copies AFTER DELETE ON documents BEGIN
    UPDATE documents SET copy_of = NULL WHERE copy_of = old.id;
END;
