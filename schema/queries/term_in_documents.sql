-- Which of these documents (:ids, a JSON array) match :match in their topics index.
SELECT rowid AS id FROM documents_fts
WHERE documents_fts MATCH :match AND rowid IN (SELECT value FROM json_each(:ids))
