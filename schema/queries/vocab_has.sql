-- Does any document hold the stemmed word :term, in its passages or in its title, description,
-- tags and topics? A query word none holds is offered the nearest indexed words (query.suggest).
SELECT EXISTS (SELECT 1 FROM chunks_vocab WHERE term = :term)
    OR EXISTS (SELECT 1 FROM documents_vocab WHERE term = :term)
