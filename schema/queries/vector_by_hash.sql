-- A vector :model already made from the same text (:text_hash), under any chunk id.
SELECT scale, vector FROM chunk_vectors WHERE model = :model AND text_hash = :text_hash LIMIT 1
