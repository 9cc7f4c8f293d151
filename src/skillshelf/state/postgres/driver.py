"""psycopg, the optional `postgres` extra: imported here first, so that a database_url without it installed
is one error saying what to install, wherever the first PostgreSQL store is opened."""

from __future__ import annotations

from skillshelf.errors import ErrorCode, SkillshelfError

try:
    import psycopg
    from psycopg.conninfo import conninfo_to_dict
    from psycopg_pool import ConnectionPool
except ImportError as missing:
    raise SkillshelfError(
        ErrorCode.VALIDATION_ERROR,
        f"database_url names a PostgreSQL database, but {missing.name} is not installed: install "
        "skillshelf[postgres] (pip install 'skillshelf[postgres]'), or unset database_url for the embedded files.",
    ) from missing

__all__ = ["ConnectionPool", "conninfo_to_dict", "psycopg"]
