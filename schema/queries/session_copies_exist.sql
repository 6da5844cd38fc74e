-- Does the index hold a copy of an agent session (documents.copy_of, migration 0012)? Then a
-- search without filters still applies document_filter.sql, which leaves copies out.
SELECT EXISTS (SELECT 1 FROM documents WHERE copy_of IS NOT NULL)
