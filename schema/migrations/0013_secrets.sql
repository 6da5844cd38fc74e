-- memdex schema, migration 0013: secrets are masked before they reach the index (issue 38).
-- Agents' session logs hold API keys, tokens and private keys that passed through a shell;
-- ingest replaces each by a marker such as [secret:aws-access-key] (memdex/secrets.py) in
-- every text it writes, so no table, full-text index or vector holds the value.

-- roots.keep_secrets: 1 keeps secrets as they were typed (`memdex index --keep-secrets`);
-- NULL or 0 masks them (the default, `--mask-secrets`). Remembered per root.
ALTER TABLE roots ADD COLUMN keep_secrets INTEGER;

-- What was masked in each document, by kind: `memdex status` counts them. A document's rows
-- go with it, and are written again when it is.
CREATE TABLE secrets_masked (
    document_id INTEGER NOT NULL REFERENCES documents(id) ON DELETE CASCADE,
    kind TEXT NOT NULL,                 -- memdex.secrets' rule kind: aws-access-key, private-key...
    count INTEGER NOT NULL,
    PRIMARY KEY (document_id, kind)
) WITHOUT ROWID;

-- The rules the stored text was masked with (secrets.IDENTITY). Empty here: store/db.py masks
-- every document already indexed once, in place, and again whenever the rules change.
CREATE TABLE secret_rules (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    identity TEXT NOT NULL
);
INSERT INTO secret_rules (id, identity) VALUES (1, '');
