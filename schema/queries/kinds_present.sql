-- The kinds of document this index holds.
SELECT DISTINCT kind FROM documents ORDER BY kind
