"""The store: the SQLite file, its lock, and reading back what it holds."""
