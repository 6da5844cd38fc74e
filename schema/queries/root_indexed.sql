-- A root was walked in full: when, and by which version of the parsers.
UPDATE roots SET indexed_at = :now, ingest_version = :version WHERE id = :id
