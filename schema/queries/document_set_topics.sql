UPDATE documents SET topics = :topics WHERE id = :id
