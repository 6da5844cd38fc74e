-- Register a root (or update how it is indexed); returns its id.
INSERT INTO roots (path, kind, detected_kind, scope, chunk_tokens, added_at)
VALUES (:path, :kind, :detected_kind, :scope, :chunk_tokens, :now)
ON CONFLICT (path) DO UPDATE SET
    kind = excluded.kind,
    detected_kind = excluded.detected_kind,
    scope = excluded.scope,
    chunk_tokens = excluded.chunk_tokens
RETURNING id
