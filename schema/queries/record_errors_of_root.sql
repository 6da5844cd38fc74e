-- Records skipped inside the files of a root, so an unchanged run reports them again.
SELECT f.path, f.kind, r.record, r.reason FROM record_errors r JOIN files f ON f.id = r.file_id
WHERE f.root_id = :root_id ORDER BY r.id
