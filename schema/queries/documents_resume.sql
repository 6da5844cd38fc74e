-- What the command that resumes a document's agent session is made from (:ids, a JSON
-- array): its kind, its key and its meta (the session id, the project folder).
SELECT d.id, d.kind, d.key, d.meta
FROM documents d
WHERE d.id IN (SELECT value FROM json_each(:ids))
