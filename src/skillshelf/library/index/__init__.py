"""The search index over the library roots and keeping it fresh (stat-only syncs, a watcher)."""
