-- The files the index rows of a root's files point at (their topics come from those rows).
SELECT DISTINCT l.target FROM index_links l JOIN files f ON f.id = l.file_id WHERE f.root_id = :root_id
