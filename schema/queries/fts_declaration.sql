-- The CREATE VIRTUAL TABLE statement of an FTS5 table (:name), as the index declared it.
SELECT sql FROM sqlite_master WHERE type = 'table' AND name = :name
