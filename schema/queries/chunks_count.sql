-- How many chunks there are: the N of idf (query/ranking.py index_idf).
SELECT count(*) FROM chunks
