-- Register a root (or update how it is indexed); returns its id, which parsers last read it,
-- and whether it keeps deleted files' documents. A new root counts as read by the current
-- parsers: what it holds is read now anyway, or was read under the root it is taken from.
-- keep_deleted is remembered: NULL (not given this time) leaves what was set before.
INSERT INTO roots (path, kind, detected_kind, scope, chunk_tokens, keep_deleted, added_at, ingest_version)
VALUES (:path, :kind, :detected_kind, :scope, :chunk_tokens, :keep_deleted, :now, :version)
ON CONFLICT (path) DO UPDATE SET
    kind = excluded.kind,
    detected_kind = excluded.detected_kind,
    scope = excluded.scope,
    chunk_tokens = excluded.chunk_tokens,
    keep_deleted = coalesce(excluded.keep_deleted, roots.keep_deleted)
RETURNING id, ingest_version, keep_deleted
