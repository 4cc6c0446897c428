"""The SQLite engine (``<home>/data.db``): its store, connections, schema, dialect, damage
notes and doctor's checks. Private: only ``storage`` and ``backend`` import it."""
