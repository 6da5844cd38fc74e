-- Documents, chunks, topics and index rows of the file go with it (ON DELETE CASCADE).
DELETE FROM files WHERE id = :id
