SELECT synonym FROM synonyms WHERE term = :term ORDER BY id
