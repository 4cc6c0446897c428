"""The transcript's recall index, written once for both engines: its contract, postings and
BM25 ranking, rows by key, vectors and their inverted lists."""
