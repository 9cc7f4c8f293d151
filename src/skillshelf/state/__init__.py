"""Shared state in PostgreSQL: what the stores of usage events (library/usage/postgres.py), memory notes
(memory/postgres.py) and the call log (state/calllog.py) share when `database_url` is set: the URL
(url.py), one connection pool per database and process (database.py), and the versioned schema
(schema.py). Nothing here is imported unless a PostgreSQL URL is configured: psycopg is the optional
`postgres` extra."""
