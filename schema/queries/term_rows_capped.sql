-- In how many passages a term occurs, counting no further than :cap: enough to tell a term
-- too common to rank by, at the cost of reading :cap entries of its posting list at most.
SELECT count(*) FROM (SELECT 1 FROM chunks_fts WHERE chunks_fts MATCH :match LIMIT :cap)
