"""The checks behind ``scripts/reliability.py``: one module per kind of trouble."""
