UPDATE roots SET indexed_at = :now WHERE id = :id
