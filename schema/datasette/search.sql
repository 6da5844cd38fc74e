-- title: Search: the whole cascade
-- description: The ranked results of `memdex search` for q: topics, topics + synonyms, content, content + synonyms, then any-word matches. One row per document, best first.
SELECT
    r.key + 1 AS rank,
    json_extract(r.value, '$.id') AS document_id,
    json_extract(r.value, '$.title') AS title,
    json_extract(r.value, '$.kind') AS kind,
    json_extract(r.value, '$.match_layer') AS layer,
    json_extract(r.value, '$.relevance_score') AS relevance,
    json_extract(r.value, '$.why_relevant') AS why,
    json_extract(r.value, '$.snippet') AS snippet,
    json_extract(r.value, '$.location') AS location,
    json_extract(r.value, '$.estimated_tokens') AS est_tokens
FROM json_each(memdex_search(:q, 20)) AS r
ORDER BY rank
