"""Serena tiered memory folders: their index files, lint, keywords and token costs."""
