-- Does any document pass these filters (the parameters of document_filter.sql), whatever the
-- query? When none does, the search says which values the index holds.
SELECT EXISTS (SELECT 1 FROM documents d WHERE {{document_filter}})
