DELETE FROM synonyms WHERE term = :term
