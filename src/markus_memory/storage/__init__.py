"""Episodic storage backends: repository protocols, SQLite default, versioned migrations."""
