-- One document of a file read in part (a session gone from, or changed in, a database);
-- its chunks, topics and full-text entries go with it.
DELETE FROM documents WHERE id = :id
