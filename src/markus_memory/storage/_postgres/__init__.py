"""The PostgreSQL engine (``MARKUS_DATABASE_URL``): its store, pools, schema, dialect, documents,
vectors, health probe, diagnosis and doctor's checks. Private: only ``storage`` and ``backend``
import it."""
