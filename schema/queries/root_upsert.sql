-- Register a root (or update how it is indexed); returns its id, which parsers last read it,
-- whether it keeps deleted files' documents, and whether it keeps secrets. A new root counts
-- as read by the current parsers: what it holds is read now anyway, or was read under the
-- root it is taken from. keep_deleted and keep_secrets are remembered: NULL (not given this
-- time) leaves what was set before. A root whose keep_secrets changes is read again in full
-- (ingest_version 0): its stored text is masked, or holds its secrets again, from the files.
INSERT INTO roots (
    path, kind, detected_kind, scope, chunk_tokens, keep_deleted, keep_secrets, added_at, ingest_version
)
VALUES (
    :path, :kind, :detected_kind, :scope, :chunk_tokens, :keep_deleted, :keep_secrets, :now, :version
)
ON CONFLICT (path) DO UPDATE SET
    kind = excluded.kind,
    detected_kind = excluded.detected_kind,
    scope = excluded.scope,
    chunk_tokens = excluded.chunk_tokens,
    keep_deleted = coalesce(excluded.keep_deleted, roots.keep_deleted),
    keep_secrets = coalesce(excluded.keep_secrets, roots.keep_secrets),
    ingest_version = CASE
        WHEN excluded.keep_secrets IS NOT NULL
            AND excluded.keep_secrets IS NOT coalesce(roots.keep_secrets, 0) THEN 0
        ELSE roots.ingest_version
    END
RETURNING id, ingest_version, keep_deleted, keep_secrets
