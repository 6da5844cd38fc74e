-- How many chunks hold each stemmed term (:terms, a JSON array); a term no chunk holds has no row.
SELECT term, doc FROM chunks_vocab WHERE term IN (SELECT value FROM json_each(:terms))
