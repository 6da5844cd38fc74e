-- Count secrets masked in a document, by kind (added to what its earlier lines had: a
-- session log read on from where it stopped).
INSERT INTO secrets_masked (document_id, kind, count) VALUES (:document_id, :kind, :count)
ON CONFLICT (document_id, kind) DO UPDATE SET count = secrets_masked.count + excluded.count
