-- A topic that was a word of a secret, gone from a document (store/masking.py).
DELETE FROM topics WHERE document_id = :document_id AND topic = :topic
