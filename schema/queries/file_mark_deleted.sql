-- A file is gone but its documents stay (its root keeps deleted files): mark when memdex
-- noticed. Its tail stays too, so a session log that comes back longer is read on.
UPDATE files SET deleted_at = :now WHERE id = :id AND deleted_at IS NULL
