"""Each repository of the episodic store: its records and the protocol both engines implement
(composed in :mod:`..episodic`)."""
