"""Validate JSON-like data against a small, strict subset of JSON Schema (2020-12 semantics).

Supported keywords: type, enum, const, properties, required, additionalProperties, items,
minItems, maxItems, uniqueItems, minLength, maxLength, pattern, minimum, maximum,
exclusiveMinimum, exclusiveMaximum, multipleOf. Annotations (title, description, default,
examples, format, $schema, $id, $comment) are ignored. Any other keyword raises ValueError,
so a schema never silently validates less than its author expects.
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any

ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "format", "$schema", "$id", "$comment", "deprecated"}
)
SUPPORTED = frozenset(
    {
        "type",
        "enum",
        "const",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "minItems",
        "maxItems",
        "uniqueItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
    }
)
TYPES = frozenset({"object", "array", "string", "integer", "number", "boolean", "null"})


def _pointer(path: list[str | int]) -> str:
    """Render a path as a JSON Pointer (RFC 6901), escaping ``~`` and ``/``."""
    return "".join("/" + str(part).replace("~", "~0").replace("/", "~1") for part in path)


def _is_type(value: Any, kind: str) -> bool:
    if kind == "null":
        return value is None
    if kind == "boolean":
        return isinstance(value, bool)
    if kind == "integer":
        if isinstance(value, bool):
            return False
        return isinstance(value, int) or (isinstance(value, float) and value.is_integer())
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "string":
        return isinstance(value, str)
    if kind == "array":
        return isinstance(value, list)
    return isinstance(value, dict)


def _json_equal(a: Any, b: Any) -> bool:
    """Equality as JSON Schema defines it: 1 == 1.0, but True != 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_json_equal(a[key], b[key]) for key in a)
    return type(a) is type(b) and bool(a == b)


def _check_keywords(schema: dict[str, Any], where: str) -> None:
    """Check one schema object's own keywords (not its subschemas)."""
    unknown = set(schema) - SUPPORTED - ANNOTATIONS
    if unknown:
        raise ValueError(f"unsupported keyword(s) at {where}: {', '.join(sorted(unknown))}")
    kinds = schema.get("type", [])
    for kind in [kinds] if isinstance(kinds, str) else kinds:
        if kind not in TYPES:
            raise ValueError(f"unknown type {kind!r} at {where}")
    if "pattern" in schema:
        try:
            re.compile(schema["pattern"])
        except re.error as exc:
            raise ValueError(f"invalid pattern at {where}: {exc}") from None
    if not isinstance(schema.get("properties", {}), dict):
        raise ValueError(f"properties at {where} must be an object")
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(name, str) for name in required):
        raise ValueError(f"required at {where} must be a list of strings")
    if "multipleOf" in schema and not schema["multipleOf"] > 0:
        raise ValueError(f"multipleOf at {where} must be greater than 0")


def _check_schema(schema: Any, where: str) -> None:
    """Raise ValueError if ``schema`` (recursively) uses unsupported or malformed keywords."""
    if isinstance(schema, bool):
        return
    if not isinstance(schema, dict):
        raise ValueError(f"schema at {where or '/'} must be an object or a boolean")
    _check_keywords(schema, where or "/")
    for name, sub in schema.get("properties", {}).items():
        _check_schema(sub, f"{where}/properties/{name}")
    if "items" in schema:
        _check_schema(schema["items"], f"{where}/items")
    if isinstance(schema.get("additionalProperties"), dict):
        _check_schema(schema["additionalProperties"], f"{where}/additionalProperties")


def _string_messages(value: str, schema: dict[str, Any]) -> list[str]:
    messages = []
    if "minLength" in schema and len(value) < schema["minLength"]:
        messages.append(f"must be at least {schema['minLength']} characters")
    if "maxLength" in schema and len(value) > schema["maxLength"]:
        messages.append(f"must be at most {schema['maxLength']} characters")
    if "pattern" in schema and re.search(schema["pattern"], value) is None:
        messages.append(f"must match pattern {schema['pattern']}")
    return messages


def _number_messages(value: float, schema: dict[str, Any]) -> list[str]:
    messages = []
    if "minimum" in schema and value < schema["minimum"]:
        messages.append(f"must be >= {schema['minimum']}")
    if "maximum" in schema and value > schema["maximum"]:
        messages.append(f"must be <= {schema['maximum']}")
    if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
        messages.append(f"must be > {schema['exclusiveMinimum']}")
    if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
        messages.append(f"must be < {schema['exclusiveMaximum']}")
    if "multipleOf" in schema:
        quotient = value / schema["multipleOf"]
        if not math.isclose(quotient, round(quotient), rel_tol=0, abs_tol=1e-9):
            messages.append(f"must be a multiple of {schema['multipleOf']}")
    return messages


def _array_messages(value: list[Any], schema: dict[str, Any]) -> list[str]:
    messages = []
    if "minItems" in schema and len(value) < schema["minItems"]:
        messages.append(f"must have at least {schema['minItems']} items")
    if "maxItems" in schema and len(value) > schema["maxItems"]:
        messages.append(f"must have at most {schema['maxItems']} items")
    if schema.get("uniqueItems") and any(_json_equal(value[i], value[j]) for i in range(len(value)) for j in range(i)):
        messages.append("items must be unique")
    return messages


def _value_messages(value: Any, schema: dict[str, Any]) -> list[str]:
    """Messages about ``value`` itself (not its children), after its type has matched."""
    messages = []
    if "const" in schema and not _json_equal(value, schema["const"]):
        messages.append(f"must equal {json.dumps(schema['const'])}")
    if "enum" in schema and not any(_json_equal(value, option) for option in schema["enum"]):
        messages.append(f"must be one of {json.dumps(schema['enum'])}")
    if isinstance(value, str):
        messages.extend(_string_messages(value, schema))
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        messages.extend(_number_messages(value, schema))
    elif isinstance(value, list):
        messages.extend(_array_messages(value, schema))
    return messages


def _validate_object(
    value: dict[str, Any], schema: dict[str, Any], path: list[str | int], errors: list[dict[str, str]]
) -> None:
    errors.extend(
        {"path": _pointer([*path, name]), "message": "is required"}
        for name in schema.get("required", [])
        if name not in value
    )
    properties: dict[str, Any] = schema.get("properties", {})
    extra = schema.get("additionalProperties", True)
    for name, item in value.items():
        if name in properties:
            _validate(item, properties[name], [*path, name], errors)
        elif extra is False:
            errors.append({"path": _pointer([*path, name]), "message": "is not an allowed property"})
        elif isinstance(extra, dict):
            _validate(item, extra, [*path, name], errors)


def _validate(value: Any, schema: Any, path: list[str | int], errors: list[dict[str, str]]) -> None:
    """Append every error for ``value`` under ``schema`` to ``errors``, depth first."""
    if schema is True:
        return
    if schema is False:
        errors.append({"path": _pointer(path), "message": "no value is allowed here"})
        return
    if "type" in schema:
        kinds = [schema["type"]] if isinstance(schema["type"], str) else schema["type"]
        if not any(_is_type(value, kind) for kind in kinds):
            message = f"expected {' or '.join(kinds)}, got {_describe(value)}"
            errors.append({"path": _pointer(path), "message": message})
            return
    errors.extend({"path": _pointer(path), "message": message} for message in _value_messages(value, schema))
    if isinstance(value, list) and "items" in schema:
        for index, item in enumerate(value):
            _validate(item, schema["items"], [*path, index], errors)
    elif isinstance(value, dict):
        _validate_object(value, schema, path, errors)


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def validate_json_input(data: Any, schema: dict[str, Any]) -> dict[str, Any]:
    """Validate ``data`` against ``schema`` and return ``{"valid": bool, "errors": [...]}``.

    Each error is ``{"path": JSON Pointer, "message": str}``; all errors are collected, in
    document order. Patterns use ``re.search`` (unanchored), as JSON Schema specifies: write
    ``^...$`` to match the whole string.

    Raises:
        ValueError: if the schema uses an unsupported keyword or is malformed.
    """
    _check_schema(schema, "")
    errors: list[dict[str, str]] = []
    _validate(data, schema, [], errors)
    return {"valid": not errors, "errors": errors}


def run(input: dict[str, Any]) -> dict[str, Any]:
    """JSON entry point.

    Input keys: ``data`` (any JSON value) and ``schema`` (object), both required.
    Returns ``{"valid": bool, "errors": [{"path", "message"}]}``.
    """
    return validate_json_input(**input)


if __name__ == "__main__":
    try:
        result = run(json.load(sys.stdin))
    except (ValueError, TypeError) as exc:
        print(json.dumps({"error": str(exc)}))
        sys.exit(1)
    print(json.dumps(result))
