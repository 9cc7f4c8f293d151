#!/usr/bin/env python3
"""Flag PostgreSQL migration statements that are not idempotent or that lock tables for long.

Reads JSON from stdin: {"sql": "<migration text>"}.
Prints JSON to stdout:
  {"statements": int, "passed": bool,
   "findings": [{"statement": int, "line": int, "rule": str, "severity": str, "message": str}]}
"passed" is false when any finding has severity "error". Exit code 0 when the input could be
read (whatever the verdict), 2 on bad input. This is a heuristic reviewer's aid, not a parser.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

VOLATILE_DEFAULTS = re.compile(
    r"DEFAULT\s+(?:RANDOM|CLOCK_TIMESTAMP|GEN_RANDOM_UUID|UUID_GENERATE_V[14]|NEXTVAL|TIMEOFDAY)\s*\("
)
ADD_COLUMN = re.compile(
    r"\bADD\s+(?!CONSTRAINT\b|PRIMARY\b|UNIQUE\b|FOREIGN\b|CHECK\b|EXCLUDE\b)(?:COLUMN\s+)?"
    r"(?P<ifnot>IF\s+NOT\s+EXISTS\s+)?(?P<rest>[^,]*)"
)

DROP_COLUMN = re.compile(
    r"\bDROP\s+(?!CONSTRAINT\b|DEFAULT\b|NOT\b|IDENTITY\b|EXPRESSION\b)(?:COLUMN\s+)?(?P<ifexists>IF\s+EXISTS\s+)?\S+"
)


DOLLAR_TAG = re.compile(r"\$[A-Za-z_]*\$")
Finding = tuple[str, str, str]  # (rule, severity, message)


def _scan_token(sql: str, i: int) -> tuple[int, str] | None:
    """If a comment, string, quoted identifier or dollar-quoted body starts at ``i``, return
    (end index, text to keep in its place); otherwise None."""
    n = len(sql)
    if sql.startswith("--", i):
        end = sql.find("\n", i)
        return (n if end == -1 else end), ""
    if sql.startswith("/*", i):
        end = sql.find("*/", i + 2)
        return (n if end == -1 else end + 2), " "
    if sql[i] == "'":
        j = i + 1
        while j < n and not (sql[j] == "'" and not sql.startswith("''", j)):
            j += 2 if sql.startswith("''", j) else 1
        return min(j + 1, n), "''"
    if sql[i] == '"':
        end = sql.find('"', i + 1)
        end = n if end == -1 else end + 1
        return end, sql[i:end]
    tag = DOLLAR_TAG.match(sql, i)
    if tag:
        end = sql.find(tag.group(0), tag.end())
        return (n if end == -1 else end + len(tag.group(0))), "$$ $$"
    return None


def split_statements(sql: str) -> list[tuple[int, str]]:
    """Split on semicolons outside strings, quoted identifiers, comments and dollar quotes.

    Returns (line number, statement) pairs. Comments are dropped and string literals are
    replaced by '' so rules never match text inside them.
    """
    statements: list[tuple[int, str]] = []
    current: list[str] = []
    line = 1
    start_line = 0

    def flush() -> None:
        nonlocal current, start_line
        text = "".join(current).strip()
        if text:
            statements.append((start_line or line, text))
        current = []
        start_line = 0

    i = 0
    while i < len(sql):
        token = _scan_token(sql, i)
        end, text = token if token is not None else (i + 1, sql[i])
        if token is None and text == ";":
            flush()
        else:
            if not start_line and text.strip():
                start_line = line
            current.append(text)
        line += sql[i:end].count("\n")
        i = end
    flush()
    return statements


def _create_drop_findings(s: str, in_transaction: bool) -> list[Finding]:
    found: list[Finding] = []
    if re.match(r"CREATE\s+(?:UNLOGGED\s+|TEMP\s+|TEMPORARY\s+)?TABLE\b", s) and "IF NOT EXISTS" not in s:
        found.append(("M001", "warning", "CREATE TABLE without IF NOT EXISTS is not idempotent"))
    if re.match(r"CREATE\s+(?:UNIQUE\s+)?INDEX\b", s):
        if "CONCURRENTLY" not in s:
            found.append(("M002", "error", "CREATE INDEX without CONCURRENTLY blocks writes while it builds"))
        elif in_transaction:
            found.append(("M003", "error", "CREATE INDEX CONCURRENTLY cannot run inside a transaction block"))
        if "IF NOT EXISTS" not in s:
            found.append(("M001", "warning", "CREATE INDEX without IF NOT EXISTS is not idempotent"))
    drop = re.match(r"DROP\s+(TABLE|INDEX|VIEW|MATERIALIZED\s+VIEW|SEQUENCE|TYPE|FUNCTION|TRIGGER)\b", s)
    if drop:
        if "IF EXISTS" not in s:
            found.append(("M001", "warning", f"DROP {drop.group(1)} without IF EXISTS is not idempotent"))
        if drop.group(1) == "INDEX" and "CONCURRENTLY" not in s:
            found.append(("M002", "warning", "DROP INDEX without CONCURRENTLY takes an ACCESS EXCLUSIVE lock"))
        elif drop.group(1) == "INDEX" and in_transaction:
            found.append(("M003", "error", "DROP INDEX CONCURRENTLY cannot run inside a transaction block"))
    return found


def _column_findings(s: str) -> list[Finding]:
    found: list[Finding] = []
    for match in ADD_COLUMN.finditer(s):
        rest = match.group("rest")
        if not match.group("ifnot"):
            found.append(("M001", "warning", "ADD COLUMN without IF NOT EXISTS is not idempotent"))
        if "NOT NULL" in rest and "DEFAULT" not in rest:
            found.append(("M004", "error", "ADD COLUMN ... NOT NULL without DEFAULT fails on a non-empty table"))
        if VOLATILE_DEFAULTS.search(rest):
            found.append(("M005", "warning", "a volatile DEFAULT rewrites the whole table under an exclusive lock"))
    for match in DROP_COLUMN.finditer(s):
        if not match.group("ifexists"):
            found.append(("M001", "warning", "DROP COLUMN without IF EXISTS is not idempotent"))
        found.append(("M010", "warning", "dropping a column breaks deployed code that still reads it"))
    return found


ALTER_RULES: tuple[tuple[re.Pattern[str], str, str, str], ...] = (
    (
        re.compile(r"\bALTER\s+(?:COLUMN\s+)?\S+\s+(?:SET\s+DATA\s+)?TYPE\b"),
        "M006",
        "warning",
        "changing a column type may rewrite the table under ACCESS EXCLUSIVE lock",
    ),
    (
        re.compile(r"\bSET\s+NOT\s+NULL\b"),
        "M007",
        "warning",
        "SET NOT NULL scans the table under ACCESS EXCLUSIVE lock; add a CHECK (col IS NOT NULL) "
        "NOT VALID constraint, VALIDATE it, then SET NOT NULL",
    ),
    (
        re.compile(r"\bADD\s+CONSTRAINT\s+\S+\s+(?:FOREIGN\s+KEY|CHECK)\b(?!.*\bNOT\s+VALID\b)"),
        "M008",
        "warning",
        "add FOREIGN KEY / CHECK constraints NOT VALID, then VALIDATE CONSTRAINT separately",
    ),
    (
        re.compile(r"\bRENAME\b"),
        "M009",
        "warning",
        "renames break code that is still running; add the new name, migrate, drop later",
    ),
)


def check_statement(stmt: str, in_transaction: bool) -> list[Finding]:
    """Return (rule, severity, message) findings for one statement."""
    s = " ".join(stmt.upper().split())
    found = _create_drop_findings(s, in_transaction)
    if s.startswith("ALTER TABLE"):
        found.extend(_column_findings(s))
        found.extend((rule, severity, message) for regex, rule, severity, message in ALTER_RULES if regex.search(s))
    if re.match(r"(UPDATE|DELETE)\b", s) and " WHERE " not in f" {s} ":
        found.append(("M011", "warning", "UPDATE/DELETE without WHERE rewrites every row at once; backfill in batches"))
    if re.match(r"(VACUUM\s+FULL|CLUSTER)\b", s):
        found.append(("M013", "error", "VACUUM FULL and CLUSTER hold ACCESS EXCLUSIVE locks for the whole rewrite"))
    return found


def check_migration(sql: str) -> dict[str, Any]:
    """Check a whole migration and return the report dict described in the module docstring."""
    statements = split_statements(sql)
    findings: list[dict[str, Any]] = []
    in_transaction = False
    alters = False
    lock_timeout = False
    for number, (line, stmt) in enumerate(statements, start=1):
        upper = " ".join(stmt.upper().split())
        if upper in ("BEGIN", "START TRANSACTION") or upper.startswith(("BEGIN ", "START TRANSACTION ")):
            in_transaction = True
        elif upper in ("COMMIT", "END", "ROLLBACK"):
            in_transaction = False
        if re.match(r"SET\s+(?:LOCAL\s+)?LOCK_TIMEOUT\b", upper):
            lock_timeout = True
        if upper.startswith("ALTER TABLE"):
            alters = True
        for rule, severity, message in check_statement(stmt, in_transaction):
            findings.append({"statement": number, "line": line, "rule": rule, "severity": severity, "message": message})
    if alters and not lock_timeout:
        findings.append(
            {
                "statement": 0,
                "line": 1,
                "rule": "M012",
                "severity": "info",
                "message": "set lock_timeout (e.g. SET lock_timeout = '5s') so a blocked ALTER fails fast "
                "instead of queueing every other query behind it",
            }
        )
    passed = not any(finding["severity"] == "error" for finding in findings)
    return {"statements": len(statements), "passed": passed, "findings": findings}


def main() -> int:
    try:
        payload = json.load(sys.stdin)
    except json.JSONDecodeError as exc:
        print(json.dumps({"error": f"stdin is not JSON: {exc}"}))
        return 2
    if not isinstance(payload, dict) or not isinstance(payload.get("sql"), str):
        print(json.dumps({"error": 'expected {"sql": "..."}'}))
        return 2
    print(json.dumps(check_migration(payload["sql"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
