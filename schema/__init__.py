"""SQL shipped inside the package as memdex.schema: migrations/ and queries/."""
