INSERT INTO synonyms (term, synonym, source) VALUES (lower(:term), lower(:synonym), :source)
ON CONFLICT (term, synonym) DO NOTHING
