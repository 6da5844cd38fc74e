-- The version of the index's vectors: drawn anew whenever what a search by meaning reads
-- changes (migration 0010). The matrix file beside the index is used only at its version.
SELECT version FROM vectors_version WHERE id = 1
