-- memdex schema, migration 0010: a version of what a search by meaning reads (issue 30).
-- The vectors are also kept outside SQLite, as a memory-mapped matrix file beside the index
-- (query/meaning/vectors.py), so that a search need not read them all from here. That file
-- records the version it was made from, and is used only while the index still has it:
-- SQLite stays the source of truth, and reading one row says whether the file is current.
-- `version` is drawn anew (random) at every change a search by meaning would see: a vector
-- written, replaced or removed, and a chunk that has a vector added or removed (searches join
-- vectors to their chunks). Random rather than counted, so that an index made again under
-- the same name, or an older copy restored over it, never meets a file of another state
-- that happens to carry its number.
CREATE TABLE vectors_version (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    version INTEGER NOT NULL
);
INSERT INTO vectors_version (id, version) VALUES (1, random());

CREATE TRIGGER chunk_vectors_version_insert AFTER INSERT ON chunk_vectors BEGIN
    UPDATE vectors_version SET version = random() WHERE id = 1;
END;
CREATE TRIGGER chunk_vectors_version_update AFTER UPDATE ON chunk_vectors BEGIN
    UPDATE vectors_version SET version = random() WHERE id = 1;
END;
CREATE TRIGGER chunk_vectors_version_delete AFTER DELETE ON chunk_vectors BEGIN
    UPDATE vectors_version SET version = random() WHERE id = 1;
END;
-- A chunk's vector may outlive it (embed.py reuses it for the same text under a new id), so a
-- chunk's own coming and going changes what searches read, but only when it has a vector.
CREATE TRIGGER chunks_version_delete AFTER DELETE ON chunks
WHEN EXISTS (SELECT 1 FROM chunk_vectors WHERE chunk_id = OLD.id) BEGIN
    UPDATE vectors_version SET version = random() WHERE id = 1;
END;
CREATE TRIGGER chunks_version_insert AFTER INSERT ON chunks
WHEN EXISTS (SELECT 1 FROM chunk_vectors WHERE chunk_id = NEW.id) BEGIN
    UPDATE vectors_version SET version = random() WHERE id = 1;
END;
