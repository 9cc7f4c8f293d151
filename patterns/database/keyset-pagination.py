"""Keyset (cursor) pagination: build the next-page SQL from an opaque cursor.

Instead of ``OFFSET n`` (which reads and discards n rows and skips or repeats rows when data
changes), each page asks for rows strictly after the last row seen, in a total order.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import sys
from typing import Any

IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
PLACEHOLDERS = {"qmark": "?", "format": "%s"}
MAX_PAGE_SIZE = 1000


def _quote(name: str) -> str:
    """Quote a (possibly schema-qualified) identifier after validating every part."""
    parts = name.split(".")
    if not all(IDENTIFIER.match(part) for part in parts):
        raise ValueError(f"invalid SQL identifier: {name!r}")
    return ".".join(f'"{part}"' for part in parts)


def _order_spec(order_by: list[str]) -> list[tuple[str, bool]]:
    """Parse ``["-created_at", "id"]`` into ``[("created_at", True), ("id", False)]``."""
    spec: list[tuple[str, bool]] = []
    for entry in order_by:
        descending = entry.startswith("-")
        name = entry[1:] if descending else entry
        _quote(name)
        spec.append((name, descending))
    return spec


def encode_cursor(values: list[Any]) -> str:
    """Encode the sort-key values of the last row as an opaque, URL-safe cursor."""
    raw = json.dumps(values, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def decode_cursor(cursor: str, expected_length: int) -> list[Any]:
    """Decode a cursor made by ``encode_cursor``; raise ValueError if it is malformed."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        values = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
    except (ValueError, UnicodeError, binascii.Error):
        raise ValueError("malformed cursor") from None
    if not isinstance(values, list) or len(values) != expected_length:
        raise ValueError("cursor does not match the sort order")
    if not all(isinstance(value, (str, int, float)) and not isinstance(value, bool) for value in values):
        raise ValueError("cursor values must be strings or numbers")
    return values


def keyset_pagination(
    table: str,
    columns: list[str],
    order_by: list[str],
    page_size: int,
    cursor: str | None = None,
    paramstyle: str = "qmark",
) -> dict[str, Any]:
    """Build the SQL for one page.

    ``order_by`` lists sort columns, ``-`` prefixed for descending; its last column must be
    unique (append the primary key) so the order is total. All sort columns must be NOT NULL
    and included in ``columns``. The query fetches ``page_size + 1`` rows: the extra row only
    tells whether another page exists (see ``paginate_rows``).

    Returns ``{"sql": str, "params": list}``. Identifiers are validated and quoted; values are
    always bound parameters (``paramstyle`` "qmark" for ``?`` or "format" for ``%s``).

    Raises:
        ValueError: on invalid identifiers, sizes, paramstyle or cursor.
    """
    if paramstyle not in PLACEHOLDERS:
        raise ValueError(f"paramstyle must be one of: {', '.join(PLACEHOLDERS)}")
    if isinstance(page_size, bool) or not isinstance(page_size, int) or not 1 <= page_size <= MAX_PAGE_SIZE:
        raise ValueError(f"page_size must be an integer between 1 and {MAX_PAGE_SIZE}")
    if not columns or not order_by:
        raise ValueError("columns and order_by must not be empty")
    ph = PLACEHOLDERS[paramstyle]
    spec = _order_spec(order_by)
    for name, _ in spec:
        if name not in columns:
            raise ValueError(f"sort column {name!r} must be in columns")
    select = ", ".join(_quote(column) for column in columns)
    sql = f"SELECT {select} FROM {_quote(table)}"
    params: list[Any] = []
    if cursor is not None:
        values = decode_cursor(cursor, len(spec))
        quoted = [_quote(name) for name, _ in spec]
        directions = {descending for _, descending in spec}
        if len(directions) == 1:
            op = "<" if spec[0][1] else ">"
            if len(spec) == 1:
                where = f"{quoted[0]} {op} {ph}"
            else:
                # Row-value comparison: a single index range scan in PostgreSQL and SQLite.
                where = f"({', '.join(quoted)}) {op} ({', '.join([ph] * len(spec))})"
            params.extend(values)
        else:
            # Mixed directions: (a > x) OR (a = x AND b < y) OR ...
            clauses = []
            for i, (_, descending) in enumerate(spec):
                terms = [f"{quoted[j]} = {ph}" for j in range(i)]
                terms.append(f"{quoted[i]} {'<' if descending else '>'} {ph}")
                params.extend(values[: i + 1])
                clauses.append("(" + " AND ".join(terms) + ")")
            where = "(" + " OR ".join(clauses) + ")"
        sql += f" WHERE {where}"
    order = ", ".join(f"{_quote(name)} {'DESC' if descending else 'ASC'}" for name, descending in spec)
    sql += f" ORDER BY {order} LIMIT {ph}"
    params.append(page_size + 1)
    return {"sql": sql, "params": params}


def paginate_rows(rows: list[dict[str, Any]], order_by: list[str], page_size: int) -> dict[str, Any]:
    """Turn the ``page_size + 1`` fetched rows into ``{"items": [...], "next_cursor": str | None}``."""
    spec = _order_spec(order_by)
    items = rows[:page_size]
    if len(rows) <= page_size or not items:
        return {"items": items, "next_cursor": None}
    last = items[-1]
    return {"items": items, "next_cursor": encode_cursor([last[name] for name, _ in spec])}


def run(input: dict[str, Any]) -> dict[str, Any]:
    """JSON entry point.

    Input keys: ``table``, ``columns``, ``order_by``, ``page_size`` (required), ``cursor`` and
    ``paramstyle`` (optional). Returns ``{"sql": str, "params": list}``.
    """
    return keyset_pagination(**input)


if __name__ == "__main__":
    try:
        result = run(json.load(sys.stdin))
    except (ValueError, TypeError) as exc:
        print(json.dumps({"error": str(exc)}))
        sys.exit(1)
    print(json.dumps(result))
