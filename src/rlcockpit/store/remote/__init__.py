"""The remote room: logging to a team server: the store interface over HTTP (``client``), its local spool of ops
not yet acknowledged (``spool``) and the ingestion wire format both sides check (``wire``)."""
