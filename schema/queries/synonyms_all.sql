SELECT term, json_group_array(synonym) AS synonyms, group_concat(DISTINCT source) AS sources
FROM (SELECT term, synonym, source FROM synonyms ORDER BY term, id)
GROUP BY term
ORDER BY term
