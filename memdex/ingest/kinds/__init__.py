"""One module per source kind; the registry in memdex.ingest picks among them."""
