"""The databases: one private package per engine (``_sqlite``, ``_postgres``), reached through
:class:`markus_memory.backend.Backend` only; the code written once over their dialect; the
recall index (``recall``); each repository's records and protocol (``repos``)."""
