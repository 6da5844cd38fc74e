-- A file indexed before under another root now belongs to this one (a root registered inside it).
UPDATE files SET root_id = :root_id, rel_path = :rel_path WHERE id = :id
