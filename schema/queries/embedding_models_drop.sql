-- `memdex embed --drop`: forget :model, or every model when :model is NULL.
DELETE FROM embedding_models WHERE :model IS NULL OR name = :model
