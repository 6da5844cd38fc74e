-- memdex schema, migration 0011: the full-text indexes hold tokens memdex makes (issue 35).
-- Until now FTS5 made them (porter unicode61): "deploy" was stemmed "deploi" but "deployment"
-- "deploy", so neither found the other, and a run of Chinese or Japanese was one token. Now
-- memdex/tokens.py makes every token, for the index and for a query alike: words folded,
-- stemmed by Snowball English, CJK runs cut into overlapping pairs of characters. FTS5 gets
-- them as text joined by spaces and only splits it there (the ascii tokenizer).
--
-- Each full-text table reads its content through a view that makes that text with the SQL
-- function memdex_words(text), which memdex registers on every connection (and its Datasette
-- plugin on Datasette's): 'rebuild' and 'integrity-check' read the tokens they must, and the
-- delete and update triggers hand FTS5 the same tokens it was given. Without the function
-- (plain sqlite3) a MATCH, bm25() and the rowids still work; reading the tables' text columns,
-- or deleting rows, fails with "no such function: memdex_words" instead of harming the index.
--
-- The tables are made empty here; store/db.py fills them once (a 'rebuild' of each) because
-- the tokenizer table below names no rules yet, and again whenever the rules change.

CREATE TABLE tokenizer (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    identity TEXT NOT NULL              -- tokens.IDENTITY the full-text indexes were built with
);
INSERT INTO tokenizer (id, identity) VALUES (1, '');

DROP TABLE chunks_vocab;
DROP TABLE documents_vocab;
DROP TRIGGER documents_ad;
DROP TRIGGER documents_au;
DROP TRIGGER chunks_ad;
DROP TRIGGER chunks_au;
DROP TRIGGER documents_bd_bodies;
DROP TRIGGER synonyms_ai;
DROP TRIGGER synonyms_ad;
DROP TRIGGER synonyms_au;
DROP TABLE documents_fts;
DROP TABLE chunks_fts;
DROP TABLE bodies_fts;
DROP TABLE synonyms_fts;

CREATE VIEW document_words AS
SELECT id, memdex_words(title) AS title, memdex_words(description) AS description,
    memdex_words(tags) AS tags, memdex_words(topics) AS topics
FROM documents;
CREATE VIEW chunk_words AS
SELECT id, memdex_words(heading) AS heading, memdex_words(text) AS text FROM chunks;
CREATE VIEW body_words AS
SELECT id, memdex_words(body) AS body FROM document_bodies;
CREATE VIEW synonym_words AS
SELECT id, memdex_words(term) AS term, memdex_words(synonym) AS synonym FROM synonyms;

CREATE VIRTUAL TABLE documents_fts USING fts5(
    title, description, tags, topics,
    content="document_words", content_rowid="id", tokenize="ascii"
);
CREATE VIRTUAL TABLE chunks_fts USING fts5(
    heading, text,
    content="chunk_words", content_rowid="id", tokenize="ascii"
);
CREATE VIRTUAL TABLE bodies_fts USING fts5(
    body,
    content="body_words", content_rowid="id", tokenize="ascii"
);
CREATE VIRTUAL TABLE synonyms_fts USING fts5(
    term, synonym,
    content="synonym_words", content_rowid="id", tokenize="ascii"
);

-- New documents, chunks and bodies are written into their full-text tables by ingest, with
-- tokens it makes once (migration 0004); deletes and updates need the old values.
CREATE TRIGGER documents_ad AFTER DELETE ON documents BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, title, description, tags, topics)
    VALUES ('delete', old.id, memdex_words(old.title), memdex_words(old.description),
        memdex_words(old.tags), memdex_words(old.topics));
END;
-- An update that leaves the words as they were (an appended session log sets its title
-- again) costs nothing: the WHEN clauses.
CREATE TRIGGER documents_au AFTER UPDATE OF title, description, tags, topics ON documents
WHEN old.title IS NOT new.title OR old.description IS NOT new.description
    OR old.tags IS NOT new.tags OR old.topics IS NOT new.topics BEGIN
    INSERT INTO documents_fts (documents_fts, rowid, title, description, tags, topics)
    VALUES ('delete', old.id, memdex_words(old.title), memdex_words(old.description),
        memdex_words(old.tags), memdex_words(old.topics));
    INSERT INTO documents_fts (rowid, title, description, tags, topics)
    VALUES (new.id, memdex_words(new.title), memdex_words(new.description),
        memdex_words(new.tags), memdex_words(new.topics));
END;
CREATE TRIGGER chunks_ad AFTER DELETE ON chunks BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, heading, text)
    VALUES ('delete', old.id, memdex_words(old.heading), memdex_words(old.text));
END;
CREATE TRIGGER chunks_au AFTER UPDATE OF heading, text ON chunks
WHEN old.heading IS NOT new.heading OR old.text IS NOT new.text BEGIN
    INSERT INTO chunks_fts (chunks_fts, rowid, heading, text)
    VALUES ('delete', old.id, memdex_words(old.heading), memdex_words(old.text));
    INSERT INTO chunks_fts (rowid, heading, text)
    VALUES (new.id, memdex_words(new.heading), memdex_words(new.text));
END;
-- A body's tokens are its chunks' tokens in order (a token never spans a line), as ingest
-- writes them: each chunk's are made once here, and chunks_ad, which follows, finds them in
-- memdex_words' cache (store/db.py) instead of making them again.
CREATE TRIGGER documents_bd_bodies BEFORE DELETE ON documents WHEN old.whole_text BEGIN
    INSERT INTO bodies_fts (bodies_fts, rowid, body)
    SELECT 'delete', old.id, group_concat(memdex_words(heading) || ' ' || memdex_words(text), ' ')
    FROM (SELECT heading, text FROM chunks WHERE document_id = old.id ORDER BY seq)
    HAVING count(*) > 0;
END;
CREATE TRIGGER synonyms_ai AFTER INSERT ON synonyms BEGIN
    INSERT INTO synonyms_fts (rowid, term, synonym)
    VALUES (new.id, memdex_words(new.term), memdex_words(new.synonym));
END;
CREATE TRIGGER synonyms_ad AFTER DELETE ON synonyms BEGIN
    INSERT INTO synonyms_fts (synonyms_fts, rowid, term, synonym)
    VALUES ('delete', old.id, memdex_words(old.term), memdex_words(old.synonym));
END;
CREATE TRIGGER synonyms_au AFTER UPDATE ON synonyms BEGIN
    INSERT INTO synonyms_fts (synonyms_fts, rowid, term, synonym)
    VALUES ('delete', old.id, memdex_words(old.term), memdex_words(old.synonym));
    INSERT INTO synonyms_fts (rowid, term, synonym)
    VALUES (new.id, memdex_words(new.term), memdex_words(new.synonym));
END;

-- Term statistics of the full-text indexes (how many chunks or documents hold each token).
CREATE VIRTUAL TABLE chunks_vocab USING fts5vocab(chunks_fts, 'row');
CREATE VIRTUAL TABLE documents_vocab USING fts5vocab(documents_fts, 'row');
