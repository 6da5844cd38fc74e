-- Register a root (or update how it is indexed); returns its id.
INSERT INTO roots (path, kind, detected_kind, scope, added_at)
VALUES (:path, :kind, :detected_kind, :scope, :now)
ON CONFLICT (path) DO UPDATE SET
    kind = excluded.kind,
    detected_kind = excluded.detected_kind,
    scope = excluded.scope
RETURNING id
