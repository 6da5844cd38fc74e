-- Whether a root keeps its secrets as typed (NULL: no such root yet).
SELECT keep_secrets FROM roots WHERE path = :path
