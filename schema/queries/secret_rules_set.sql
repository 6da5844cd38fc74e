UPDATE secret_rules SET identity = :identity WHERE id = 1
