"""Retrieval over the semantic memory: keyword scoring, the BM25 index and hybrid fusion."""
