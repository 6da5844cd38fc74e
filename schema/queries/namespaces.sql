-- Every namespace in the index and its documents: where refinement looks for unsearched areas.
SELECT namespace, count(*) AS documents FROM documents WHERE namespace IS NOT NULL GROUP BY namespace
