"""Parse and validate configuration from environment variables against a small spec.

All problems are collected and reported together (not one per restart), secret values never
appear in error messages, and unknown variables under the prefix are reported as likely typos.
"""

from __future__ import annotations

import json
import math
import sys
from typing import Any

SUPPORTED_TYPES = ("str", "int", "float", "bool", "list")
SPEC_KEYS = frozenset({"type", "required", "default", "choices", "min", "max", "secret", "separator", "allow_empty"})
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def _convert(raw: str, kind: str, separator: str) -> Any:
    """Convert one raw string to ``kind``; raise ValueError with a short reason on failure."""
    text = raw.strip()
    if kind == "str":
        return raw
    if kind == "int":
        try:
            return int(text, 10)
        except ValueError:
            raise ValueError("is not an integer") from None
    if kind == "float":
        try:
            value = float(text)
        except ValueError:
            raise ValueError("is not a number") from None
        if not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value
    if kind == "bool":
        lowered = text.lower()
        if lowered in TRUE_WORDS:
            return True
        if lowered in FALSE_WORDS:
            return False
        raise ValueError("is not a boolean (use true/false, yes/no, on/off or 1/0)")
    return [item.strip() for item in raw.split(separator) if item.strip()]


def _check_spec(spec: dict[str, dict[str, Any]]) -> None:
    """Reject programmer errors in the spec itself (these are bugs, not bad configuration)."""
    for name, rule in spec.items():
        valid = name.isascii() and name.replace("_", "a").isalnum() and name.isupper()
        if not valid or name[0].isdigit():
            raise ValueError(f"spec name {name!r} must be UPPER_SNAKE_CASE")
        unknown = set(rule) - SPEC_KEYS
        if unknown:
            raise ValueError(f"spec for {name} has unknown keys: {', '.join(sorted(unknown))}")
        kind = rule.get("type", "str")
        if kind not in SUPPORTED_TYPES:
            raise ValueError(f"spec for {name} has unsupported type {kind!r}")


def parse_env_config(
    environ: dict[str, str],
    spec: dict[str, dict[str, Any]],
    prefix: str = "",
) -> dict[str, Any]:
    """Read each variable ``prefix + NAME`` in ``spec`` from ``environ`` and validate it.

    Each spec entry may hold: ``type`` (str, int, float, bool, list; default str),
    ``required`` (default False), ``default`` (used when unset; not validated), ``choices``,
    ``min`` / ``max`` (numbers: value bounds; str and list: length bounds), ``secret``
    (never echo the value), ``separator`` (for list; default ","), ``allow_empty``
    (default False: an empty string counts as unset).

    Returns ``{"values": {...}, "errors": [...], "unknown": [...]}`` where ``values`` is keyed by
    the spec name (without prefix) and ``unknown`` lists prefixed variables the spec does not
    know (only when ``prefix`` is non-empty). The caller decides whether errors are fatal.

    Raises:
        ValueError: if the spec itself is malformed.
    """
    _check_spec(spec)
    values: dict[str, Any] = {}
    errors: list[str] = []
    for name, rule in spec.items():
        key = prefix + name
        kind = rule.get("type", "str")
        secret = bool(rule.get("secret", False))
        raw = environ.get(key)
        if raw is not None and raw == "" and not rule.get("allow_empty", False):
            raw = None
        if raw is None:
            if rule.get("required", False):
                errors.append(f"{key} is required but not set")
            elif "default" in rule:
                values[name] = rule["default"]
            else:
                values[name] = None
            continue
        shown = "***" if secret else repr(raw)
        try:
            value = _convert(raw, kind, rule.get("separator", ","))
        except ValueError as exc:
            errors.append(f"{key}={shown} {exc}")
            continue
        choices = rule.get("choices")
        if choices is not None and value not in choices:
            allowed = ", ".join(str(choice) for choice in choices)
            errors.append(f"{key}={shown} is not one of: {allowed}")
            continue
        measured = len(value) if kind in ("str", "list") else value
        unit = " in length" if kind in ("str", "list") else ""
        if "min" in rule and measured < rule["min"]:
            errors.append(f"{key}={shown} must be at least {rule['min']}{unit}")
            continue
        if "max" in rule and measured > rule["max"]:
            errors.append(f"{key}={shown} must be at most {rule['max']}{unit}")
            continue
        values[name] = value
    unknown: list[str] = []
    if prefix:
        known = {prefix + name for name in spec}
        unknown = sorted(key for key in environ if key.startswith(prefix) and key not in known)
    return {"values": values, "errors": errors, "unknown": unknown}


def run(input: dict[str, Any]) -> dict[str, Any]:
    """JSON entry point.

    Input keys: ``environ`` (object of strings, required), ``spec`` (object, required),
    ``prefix`` (string, optional). Returns the same dict as ``parse_env_config``.
    """
    return parse_env_config(**input)


if __name__ == "__main__":
    try:
        result = run(json.load(sys.stdin))
    except (ValueError, TypeError) as exc:
        print(json.dumps({"error": str(exc)}))
        sys.exit(1)
    print(json.dumps(result))
