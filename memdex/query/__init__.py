"""The query layer: a request, its terms and synonyms, the cascade, ranking and results."""
