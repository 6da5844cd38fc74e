-- memdex schema, migration 0003: which version of memdex's parsers last read each root.
-- When a parser learns to read the same bytes differently (a Serena row after a blank line,
-- say), an unchanged file must still be read again: a root whose ingest_version is older
-- than memdex's is re-read in full by the next `memdex index` or `memdex watch` catch-up.
ALTER TABLE roots ADD COLUMN ingest_version INTEGER NOT NULL DEFAULT 0;
