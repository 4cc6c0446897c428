"""The web UI: ``markus-memory ui``, a local inspector and editor of every agent's memory."""
