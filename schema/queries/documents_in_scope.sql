-- How many documents a search can reach under its filters: a refinement round's files_searched.
SELECT count(*) FROM documents d WHERE {{document_filter}}
