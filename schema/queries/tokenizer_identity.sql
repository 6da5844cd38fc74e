-- The word rules (memdex.tokens.IDENTITY) the full-text tables were built with: store/db.py
-- builds them again when this memdex's differ.
SELECT identity FROM tokenizer WHERE id = 1
