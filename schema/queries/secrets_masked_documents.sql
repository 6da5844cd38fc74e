-- How many documents hold at least one masked secret.
SELECT count(DISTINCT document_id) FROM secrets_masked
