-- What a set of documents (:ids, a JSON array) is about: the terms most of them share -- as a
-- tag, a topic, a namespace or a platform -- each with how many of the documents have it (at
-- least :min_count), most shared first. A term counts once per document whichever way it
-- has it ("chatgpt" as a tag of one and the platform of two: 3), and shows the kind most of
-- them have it as (ties: tag, topic, namespace, platform). Tags are also stored as topics
-- (source 'tag'); they count as tags. Case is folded; the spelling shown is one of those used.
WITH docs AS (
    SELECT d.id, d.tags, d.namespace, d.platform
    FROM documents d
    WHERE d.id IN (SELECT value FROM json_each(:ids))
),
said AS (
    SELECT docs.id AS document_id, 'tag' AS kind, 3 AS priority, trim(t.value) AS term
    FROM docs, json_each(docs.tags) t
    WHERE t.type = 'text'
    UNION
    SELECT t.document_id, 'topic', 2, trim(t.topic)
    FROM topics t JOIN docs ON docs.id = t.document_id
    WHERE t.source <> 'tag'
    UNION
    SELECT id, 'namespace', 1, namespace FROM docs WHERE namespace IS NOT NULL
    UNION
    SELECT id, 'platform', 0, platform FROM docs WHERE platform IS NOT NULL
),
by_kind AS (
    SELECT lower(term) AS key, kind, min(term) AS term, count(DISTINCT document_id) * 4 + priority AS weight
    FROM said
    WHERE term <> ''
    GROUP BY lower(term), kind
),
shown AS (  -- SQLite takes the bare columns of max()'s own row: the kind most documents use
    SELECT key, kind, term, max(weight) AS weight FROM by_kind GROUP BY key
),
total AS (
    SELECT lower(term) AS key, count(DISTINCT document_id) AS count
    FROM said
    WHERE term <> ''
    GROUP BY lower(term)
)
SELECT shown.term, shown.kind, total.count
FROM shown JOIN total ON total.key = shown.key
WHERE total.count >= :min_count
ORDER BY total.count DESC, shown.weight DESC, shown.key
LIMIT :limit
