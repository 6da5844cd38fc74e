-- Forget a root. Its files go with it (ON DELETE CASCADE), and with them their documents,
-- chunks (whose triggers delete the full-text entries), topics, index rows, session-log
-- places and skipped records; so do the problems recorded under it.
DELETE FROM roots WHERE id = :id
