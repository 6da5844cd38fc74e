-- memdex schema, migration 0007: where each document's date came from, so a result can say
-- (issue 17): frontmatter | conversation (its messages' or its archive row's timestamps) |
-- text (a date written near the top) | file name. NULL: the document has no date of its own,
-- and a result shows its file's modification time instead, as date_source 'mtime'.
ALTER TABLE documents ADD COLUMN date_source TEXT;

-- Documents indexed before this migration, worked out from what was stored, without reading
-- their files again: a conversation keeps message_count in meta; frontmatter dates are
-- created and modified; a date in the file name is in its path.
UPDATE documents SET date_source = CASE
    WHEN date IS NULL THEN NULL
    WHEN json_type(meta, '$.message_count') IS NOT NULL THEN 'conversation'
    WHEN date = modified OR date = created THEN 'frontmatter'
    WHEN instr((SELECT f.rel_path FROM files f WHERE f.id = documents.file_id), substr(date, 1, 10)) > 0
        THEN 'file name'
    ELSE 'text'
END;
