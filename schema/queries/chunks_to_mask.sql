-- A document's chunks, in order, to be masked in place.
SELECT id, heading, text, meta FROM chunks WHERE document_id = :document_id ORDER BY seq
