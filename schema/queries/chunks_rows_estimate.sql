-- How many passages the index holds, near enough: the highest chunk id (ids only grow, so
-- deleted chunks still count). One index lookup, where count(*) reads every row.
SELECT coalesce(max(id), 0) FROM chunks
