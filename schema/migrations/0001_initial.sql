-- memdex schema, migration 0001: the whole data model.
-- Source files are the truth; every row here can be rebuilt from them by `memdex index`.
-- Sizes: size_bytes is exact, est_tokens is an estimate (bytes / 4, rounded up).

-- Each folder or file given to `memdex index`, remembered so `memdex watch` and re-runs know them.
CREATE TABLE roots (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,          -- absolute path
    kind TEXT,                          -- kind forced with --kind; NULL means detected per run
    detected_kind TEXT,                 -- what detection chose on the last run
    scope TEXT,                         -- user | project
    chunk_tokens INTEGER,               -- --chunk-tokens for this root; NULL: each kind's default
    added_at TEXT NOT NULL,
    indexed_at TEXT
);

-- Ingest state of every source file: re-indexing compares size and mtime first (a stat),
-- and reads and hashes only the files whose stat changed.
CREATE TABLE files (
    id INTEGER PRIMARY KEY,
    root_id INTEGER NOT NULL REFERENCES roots(id) ON DELETE CASCADE,
    path TEXT NOT NULL UNIQUE,          -- absolute path
    rel_path TEXT NOT NULL,             -- path relative to its root
    kind TEXT NOT NULL,                 -- parser that read it: memory, note, serena, serena-index, ...
    size INTEGER NOT NULL,
    mtime_ns INTEGER NOT NULL,
    sha256 TEXT NOT NULL,
    indexed_at TEXT NOT NULL
);
CREATE INDEX files_root_id ON files(root_id);

-- One searchable unit: a memory, a note, a Serena memory, a conversation.
-- AUTOINCREMENT: an id is never given to another document, so a saved id or link stays true.
CREATE TABLE documents (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    key TEXT NOT NULL,                  -- natural id: frontmatter id, Serena memory name, conversation id
    kind TEXT NOT NULL,
    title TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    tags TEXT NOT NULL DEFAULT '[]',    -- JSON array
    topics TEXT NOT NULL DEFAULT '[]',  -- JSON array; derived from the topics table, kept for FTS
    namespace TEXT,
    type TEXT,
    scope TEXT,
    platform TEXT,
    date TEXT,                          -- ISO 8601: modified, else created, else a date in the text or name
    created TEXT,
    modified TEXT,
    line_count INTEGER NOT NULL DEFAULT 0,
    size_bytes INTEGER NOT NULL,
    est_tokens INTEGER NOT NULL,
    meta TEXT NOT NULL DEFAULT '{}',    -- JSON: the whole frontmatter or record metadata
    UNIQUE (file_id, key)
);
CREATE INDEX documents_kind ON documents(kind);
CREATE INDEX documents_namespace ON documents(namespace);
CREATE INDEX documents_date ON documents(date);

-- Documents cut into chunks: markdown at headings, chats at message boundaries.
CREATE TABLE chunks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    seq INTEGER NOT NULL,               -- 0-based position in the document
    heading TEXT NOT NULL DEFAULT '',   -- "Title > Section > Subsection"
    text TEXT NOT NULL,
    line_start INTEGER,                 -- 1-based, inclusive, in the source file
    line_end INTEGER,
    size_bytes INTEGER NOT NULL,
    est_tokens INTEGER NOT NULL,
    meta TEXT NOT NULL DEFAULT '{}',    -- JSON: kind-specific (speaker roles, message range)
    UNIQUE (document_id, seq)
);

-- Activation vocabulary of a document: tags, aliases, keywords, and the keywords of every
-- Serena index row that points at it.
CREATE TABLE topics (
    id INTEGER PRIMARY KEY,
    document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    topic TEXT NOT NULL,
    source TEXT NOT NULL,               -- tag | alias | keyword | index | archive | derived
    source_file_id INTEGER REFERENCES files(id) ON DELETE CASCADE,  -- the index file, for source = index
    line INTEGER                        -- line of that index row
);
CREATE INDEX topics_document_id ON topics(document_id);
CREATE INDEX topics_topic ON topics(topic COLLATE NOCASE);

-- Rows of Serena index files (memory-index.md, *-index.md): keywords pointing at files.
-- Index files are structure, not search results; their rows become topics of their targets.
CREATE TABLE index_links (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    line INTEGER NOT NULL,
    keywords TEXT NOT NULL,             -- JSON array of keywords
    target TEXT NOT NULL,               -- absolute path the row points at
    label TEXT NOT NULL DEFAULT ''
);
CREATE INDEX index_links_file_id ON index_links(file_id);
CREATE INDEX index_links_target ON index_links(target);

-- Query expansion, both directions: a term reaches its synonyms and a synonym its term.
-- A group is every row sharing one term. synonyms_fts finds a query word's group after
-- stemming, so "problems" reaches the group of "problem" and "decide" that of "decided".
CREATE TABLE synonyms (
    id INTEGER PRIMARY KEY,
    term TEXT NOT NULL COLLATE NOCASE,
    synonym TEXT NOT NULL COLLATE NOCASE,
    source TEXT NOT NULL DEFAULT 'user', -- default | user | the file it was imported from
    UNIQUE (term, synonym)
);
CREATE INDEX synonyms_synonym ON synonyms(synonym COLLATE NOCASE);

-- Files that could not be read or parsed. The last good version of such a file stays indexed.
CREATE TABLE ingest_errors (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,
    root_id INTEGER REFERENCES roots(id) ON DELETE CASCADE,
    reason TEXT NOT NULL,
    size INTEGER,                       -- stat of the broken version: unchanged, it is not re-read
    mtime_ns INTEGER,
    first_seen TEXT NOT NULL,
    last_seen TEXT NOT NULL
);

-- Records inside a file that was indexed, skipped with a reason (a conversation with no
-- messages, a ChatGPT record with no mapping). They go with their file.
CREATE TABLE record_errors (
    id INTEGER PRIMARY KEY,
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    record TEXT NOT NULL,               -- which record: an id, a title, or its position
    reason TEXT NOT NULL
);
CREATE INDEX record_errors_file_id ON record_errors(file_id);

-- Full-text indexes. porter stems English ("decided" finds "deciding"), unicode61 folds case
-- and, with remove_diacritics 2, accents. External content: the text lives once, in its table.
-- content="..." is the form Datasette detects, so its search box works on both tables.
CREATE VIRTUAL TABLE documents_fts USING fts5(
    title, description, tags, topics,
    content="documents", content_rowid="id",
    tokenize="porter unicode61 remove_diacritics 2"
);
CREATE TRIGGER documents_ai AFTER INSERT ON documents BEGIN
    INSERT INTO documents_fts (rowid, title, description, tags, topics)
    VALUES (new.id, new.title, new.description, new.tags, new.topics);
END;
CREATE TRIGGER documents_ad AFTER DELETE ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, title, description, tags, topics)
    VALUES ('delete', old.id, old.title, old.description, old.tags, old.topics);
END;
CREATE TRIGGER documents_au AFTER UPDATE OF title, description, tags, topics ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, title, description, tags, topics)
    VALUES ('delete', old.id, old.title, old.description, old.tags, old.topics);
    INSERT INTO documents_fts (rowid, title, description, tags, topics)
    VALUES (new.id, new.title, new.description, new.tags, new.topics);
END;

CREATE VIRTUAL TABLE chunks_fts USING fts5(
    heading, text,
    content="chunks", content_rowid="id",
    tokenize="porter unicode61 remove_diacritics 2"
);
CREATE TRIGGER chunks_ai AFTER INSERT ON chunks BEGIN
    INSERT INTO chunks_fts (rowid, heading, text) VALUES (new.id, new.heading, new.text);
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, heading, text)
    VALUES ('delete', old.id, old.heading, old.text);
END;
CREATE TRIGGER chunks_au AFTER UPDATE OF heading, text ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, heading, text)
    VALUES ('delete', old.id, old.heading, old.text);
    INSERT INTO chunks_fts (rowid, heading, text) VALUES (new.id, new.heading, new.text);
END;

CREATE VIRTUAL TABLE synonyms_fts USING fts5(
    term, synonym,
    content="synonyms", content_rowid="id",
    tokenize="porter unicode61 remove_diacritics 2"
);
CREATE TRIGGER synonyms_ai AFTER INSERT ON synonyms BEGIN
    INSERT INTO synonyms_fts (rowid, term, synonym) VALUES (new.id, new.term, new.synonym);
END;
CREATE TRIGGER synonyms_ad AFTER DELETE ON synonyms BEGIN
    INSERT INTO synonyms_fts (synonyms_fts, rowid, term, synonym)
    VALUES ('delete', old.id, old.term, old.synonym);
END;
CREATE TRIGGER synonyms_au AFTER UPDATE ON synonyms BEGIN
    INSERT INTO synonyms_fts (synonyms_fts, rowid, term, synonym)
    VALUES ('delete', old.id, old.term, old.synonym);
    INSERT INTO synonyms_fts (rowid, term, synonym) VALUES (new.id, new.term, new.synonym);
END;

-- Whole-document text for ranking: plain BM25 over a document scores terms spread across
-- its sections, which the best single chunk cannot. The text is not stored twice: the FTS
-- table's content is a view joining the document's chunks in order. Because a view has no
-- triggers, ingest writes this index itself (document_body_insert / _delete queries), before
-- a document's chunks go; 'rebuild' and 'integrity-check' read the view as usual.
CREATE VIEW document_bodies AS
SELECT document_id AS id, group_concat(heading || char(10) || text, char(10)) AS body
FROM (SELECT document_id, heading, text FROM chunks ORDER BY document_id, seq)
GROUP BY document_id;

CREATE VIRTUAL TABLE bodies_fts USING fts5(
    body,
    content="document_bodies", content_rowid="id",
    tokenize="porter unicode61 remove_diacritics 2"
);
-- The same text as the view gives, built from this document's chunks only: a filter on
-- the view is not pushed inside its GROUP BY, and would scan every chunk.
CREATE TRIGGER documents_bd_bodies BEFORE DELETE ON documents BEGIN
    INSERT INTO bodies_fts (bodies_fts, rowid, body)
    SELECT 'delete', old.id, group_concat(heading || char(10) || text, char(10))
    FROM (SELECT heading, text FROM chunks WHERE document_id = old.id ORDER BY seq)
    HAVING count(*) > 0;
END;

-- Term statistics of the full-text indexes (how many chunks or documents hold each stem):
-- they weigh words when memdex explains and snippets a result, and serve keyword tools.
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE VIRTUAL TABLE documents_vocab USING fts5vocab(documents_fts, 'row');
