-- The rules (memdex.secrets.IDENTITY) the index's stored text was last masked with.
SELECT identity FROM secret_rules WHERE id = 1
