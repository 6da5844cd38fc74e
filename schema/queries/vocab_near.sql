-- The indexed words a word no document holds may have meant: the stems of both vocabularies
-- from :low up to :high (those sharing its first letter), :shortest to :longest characters
-- long, at most :cap from each table. doc: how many rows (passages, or documents' topic
-- fields) hold the stem. Reading a range of the FTS5 index costs a share of it, not all of it.
SELECT term, doc FROM (
    SELECT term, doc FROM chunks_vocab
    WHERE term >= :low AND term < :high AND length(term) BETWEEN :shortest AND :longest
    LIMIT :cap
)
UNION ALL
SELECT term, doc FROM (
    SELECT term, doc FROM documents_vocab
    WHERE term >= :low AND term < :high AND length(term) BETWEEN :shortest AND :longest
    LIMIT :cap
)
