-- How many chunks hold each stemmed term (:terms, a JSON array), and how many chunks there are.
SELECT term, doc FROM chunks_vocab WHERE term IN (SELECT value FROM json_each(:terms))
UNION ALL
SELECT '', count(*) FROM chunks
