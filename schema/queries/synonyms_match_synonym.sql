-- Synonym rows whose synonym starts with the stemmed phrase :phrase (length checked by the caller).
SELECT s.term, s.synonym FROM synonyms s
WHERE s.id IN (SELECT rowid FROM synonyms_fts WHERE synonyms_fts MATCH '{synonym} : ^' || :phrase)
