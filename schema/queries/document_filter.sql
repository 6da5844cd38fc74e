-- Filters shared by every layer, as one expression over documents d, included by the layer
-- queries. A NULL parameter means "no filter"; lists are JSON arrays. A copy of an agent
-- session indexed from another file (copy_of, migration 0012) is never a result.
d.copy_of IS NULL
AND (:kinds IS NULL OR d.kind IN (SELECT value FROM json_each(:kinds)))
AND (:namespace IS NULL OR d.namespace = :namespace COLLATE NOCASE
     OR substr(d.namespace, 1, length(:namespace) + 1) = :namespace || '/' COLLATE NOCASE)
AND (:type IS NULL OR d.type = :type COLLATE NOCASE)
AND (:scope IS NULL OR d.scope = :scope)
AND (:platform IS NULL OR d.platform = :platform COLLATE NOCASE)
AND (:project IS NULL OR json_extract(d.meta, '$.project') = :project
     OR substr(json_extract(d.meta, '$.project'), -length(:project) - 1) = '/' || :project
     OR substr(json_extract(d.meta, '$.project'), 1, length(:project) + 1) = :project || '/')
AND (:branch IS NULL OR json_extract(d.meta, '$.branch') = :branch)
-- Dates: a document's own, else its file's modification time (document_date.sql).
AND (:since IS NULL OR {{document_date}} >= :since)
AND (:until IS NULL OR substr({{document_date}}, 1, length(:until)) <= :until)
AND (:years IS NULL OR substr({{document_date}}, 1, 4) IN (SELECT value FROM json_each(:years)))
AND (:months IS NULL OR CAST(substr({{document_date}}, 6, 2) AS INTEGER) IN (SELECT value FROM json_each(:months)))
AND (:tags IS NULL OR NOT EXISTS (
    SELECT 1 FROM json_each(:tags) want
    WHERE NOT EXISTS (
        SELECT 1 FROM json_each(d.tags) have WHERE lower(have.value) = lower(want.value)
    )
))
