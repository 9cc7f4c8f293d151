"""Usage events: which skills were used, when, from which projects (SQLite, append-only)."""
