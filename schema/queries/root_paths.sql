SELECT id, path FROM roots
