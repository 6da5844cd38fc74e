-- The id the next chunk gets: chunks is AUTOINCREMENT, so past every id ever used.
SELECT coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'chunks'), 0) + 1
