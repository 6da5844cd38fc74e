-- A document's date as searches and results use it, over documents d: its own date, else its
-- file's modification time (UTC, to the second; date_source 'mtime'). Included by the date
-- filters, the period listing and the results, so "dated by file time" means one thing.
coalesce(d.date, (SELECT strftime('%Y-%m-%dT%H:%M:%SZ', mf.mtime_ns / 1000000000, 'unixepoch')
                  FROM files mf WHERE mf.id = d.file_id))
