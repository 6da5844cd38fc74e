-- Everything a result shows about its documents (:ids, a JSON array). A document with no date
-- of its own shows its file's modification time (UTC), marked as such. file_documents: how many
-- documents its file holds (a chat export: many; a location then names the document by its key).
SELECT d.id, d.key, d.kind, d.title, d.description, d.tags, d.topics, d.namespace, d.type, d.scope,
    d.platform,
    {{document_date}} AS date,
    CASE WHEN d.date IS NULL THEN 'mtime' ELSE d.date_source END AS date_source,
    d.line_count, d.size_bytes, d.est_tokens, d.meta, f.path,
    (SELECT count(*) FROM chunks c WHERE c.document_id = d.id) AS chunk_count,
    (SELECT count(*) FROM documents o WHERE o.file_id = d.file_id) AS file_documents
FROM documents d JOIN files f ON f.id = d.file_id
WHERE d.id IN (SELECT value FROM json_each(:ids))
