DELETE FROM synonyms WHERE term = :term AND synonym = :synonym
