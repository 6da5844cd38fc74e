-- FTS5's own consistency check of every full-text index, including that each one matches
-- its content table (rank = 1). A statement fails (SQLITE_CORRUPT_VTAB) if an index is off.
-- `memdex.db.check()` runs it after PRAGMA integrity_check; so can anyone in sqlite3.
INSERT INTO documents_fts (documents_fts, rank) VALUES ('integrity-check', 1);
INSERT INTO chunks_fts (chunks_fts, rank) VALUES ('integrity-check', 1);
INSERT INTO bodies_fts (bodies_fts, rank) VALUES ('integrity-check', 1);
INSERT INTO synonyms_fts (synonyms_fts, rank) VALUES ('integrity-check', 1);
