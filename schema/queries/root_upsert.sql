-- Register a root (or update how it is indexed); returns its id and which parsers last read
-- it. A new root counts as read by the current parsers: what it holds is read now anyway, or
-- was read under the root it is taken from.
INSERT INTO roots (path, kind, detected_kind, scope, chunk_tokens, added_at, ingest_version)
VALUES (:path, :kind, :detected_kind, :scope, :chunk_tokens, :now, :version)
ON CONFLICT (path) DO UPDATE SET
    kind = excluded.kind,
    detected_kind = excluded.detected_kind,
    scope = excluded.scope,
    chunk_tokens = excluded.chunk_tokens
RETURNING id, ingest_version
