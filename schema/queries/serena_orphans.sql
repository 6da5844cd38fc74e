-- Per root: the Serena memory files no index row points at (memdex status). Their search
-- still finds them by content; a tiered read (top index -> domain index -> file) cannot.
SELECT f.root_id, count(*) AS orphans
FROM files f
WHERE f.kind = 'serena'
  AND lower(f.rel_path) NOT LIKE '%readme.md'
  AND lower(f.rel_path) NOT LIKE '%-index.md'  -- an index with prose of its own is also a document
  AND NOT EXISTS (SELECT 1 FROM index_links l WHERE l.target = f.path)
GROUP BY f.root_id
