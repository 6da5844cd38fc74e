UPDATE topics SET topic = :masked WHERE document_id = :document_id AND topic = :topic
