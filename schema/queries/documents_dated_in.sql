-- Which of these documents (:ids, a JSON array) are dated in the filter parameters' period:
-- a loosely named time ranks what it holds first (Cascade.loose_first) instead of filtering.
SELECT d.id AS document_id
FROM documents d
WHERE d.id IN (SELECT value FROM json_each(:ids))
  AND {{document_filter}}
