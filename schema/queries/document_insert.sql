INSERT INTO documents (
    id, file_id, key, kind, title, description, tags, topics, namespace, type, scope, platform,
    date, date_source, created, modified, line_count, size_bytes, est_tokens, meta, whole_text
) VALUES (
    :id, :file_id, :key, :kind, :title, :description, :tags, :topics, :namespace, :type, :scope,
    :platform, :date, :date_source, :created, :modified, :line_count, :size_bytes, :est_tokens, :meta,
    :whole_text
)
