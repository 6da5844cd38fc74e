-- Documents per kind, with their size.
SELECT kind, count(*) AS documents, sum(est_tokens) AS est_tokens
FROM documents GROUP BY kind ORDER BY documents DESC
