"""Search by meaning: a local sentence-embedding model (BERT family, no torch) turns text into vectors."""
