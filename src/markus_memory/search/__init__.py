"""Search: keyword, bm25 and vector ranking over memory and transcripts."""
