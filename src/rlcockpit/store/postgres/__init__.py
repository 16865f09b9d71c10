"""The PostgreSQL room: the team store over PostgreSQL (``store``), its metric chunk table (``chunks``), its tables
and migrations (``schema``), PostgreSQL failures as store errors (``errors``) and the experiment tables' database
on PostgreSQL (``sql``)."""
