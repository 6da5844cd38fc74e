-- Every full-text table made again from its content view (memdex_words of the text, see
-- migration 0011), and the word rules it was made with recorded. store/db.py runs it when
-- those rules are not this memdex's; so can anyone in sqlite3 with the function registered.
INSERT INTO documents_fts (documents_fts) VALUES ('rebuild');
INSERT INTO chunks_fts (chunks_fts) VALUES ('rebuild');
INSERT INTO bodies_fts (bodies_fts) VALUES ('rebuild');
INSERT INTO synonyms_fts (synonyms_fts) VALUES ('rebuild');
UPDATE tokenizer SET identity = :identity WHERE id = 1;
