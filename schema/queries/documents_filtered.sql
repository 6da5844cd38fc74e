-- The documents a search's filters allow (document_filter.sql): the meaning pass searches
-- only their chunks' vectors.
SELECT d.id FROM documents d WHERE {{document_filter}}
