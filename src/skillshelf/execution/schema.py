"""A skill's input schema: declared in its metadata, or derived from its Python code without running it.

Derivation reads the implementation with `ast` (importing it would run skill code in the server):
the parameters of the function named after the skill, or the fields of a pydantic model that
`run(input: Model)` takes. Only plain annotations are understood; anything else is left open.
"""

from __future__ import annotations

import ast
import re
from typing import Any

_SIMPLE = {"str": "string", "int": "integer", "float": "number", "bool": "boolean", "dict": "object", "list": "array"}
_SIMPLE.update({"Dict": "object", "List": "array", "Mapping": "object", "Sequence": "array"})


def function_name(skill_name: str) -> str:
    """The Python function a three-file skill exposes: snake_case of its name (`retry-backoff` -> `retry_backoff`)."""
    return re.sub(r"\W", "_", skill_name.replace("-", "_")).strip("_") or "run"


def camel_name(skill_name: str) -> str:
    head, *rest = skill_name.replace("_", "-").split("-")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def derive_python_schema(source: str, skill_name: str) -> tuple[dict[str, Any] | None, str | None]:
    """(schema, entry point) read from the code: the named function first, then `run`."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return None, None
    functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
    models = {n.name: n for n in tree.body if isinstance(n, ast.ClassDef) and _is_model(n)}
    named = functions.get(function_name(skill_name))
    if named is not None:
        return _from_parameters(named), named.name
    run = functions.get("run")
    if run is None:
        return None, None
    annotation = run.args.args[0].annotation if run.args.args else None
    if isinstance(annotation, ast.Name) and annotation.id in models:
        return _from_model(models[annotation.id]), "run"
    return {"type": "object"}, "run"


def _is_model(node: ast.ClassDef) -> bool:
    return any(isinstance(b, ast.Name | ast.Attribute) and ast.unparse(b).endswith("BaseModel") for b in node.bases)


def _from_parameters(function: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Any]:
    args = function.args
    positional = args.posonlyargs + args.args
    defaults = [None] * (len(positional) - len(args.defaults)) + list(args.defaults)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for arg, default in [*zip(positional, defaults, strict=True), *zip(args.kwonlyargs, args.kw_defaults, strict=True)]:
        if arg.arg in ("self", "cls"):
            continue
        properties[arg.arg] = _annotation_schema(arg.annotation)
        if default is None:
            required.append(arg.arg)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    if args.kwarg is None:
        schema["additionalProperties"] = False
    return schema


def _from_model(model: ast.ClassDef) -> dict[str, Any]:
    properties: dict[str, Any] = {}
    required: list[str] = []
    for statement in model.body:
        if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            properties[statement.target.id] = _annotation_schema(statement.annotation)
            if statement.value is None:
                required.append(statement.target.id)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


def _annotation_schema(node: ast.expr | None) -> dict[str, Any]:
    if node is None:
        return {}
    if isinstance(node, ast.Constant) and isinstance(node.value, str):  # a string annotation
        try:
            return _annotation_schema(ast.parse(node.value, mode="eval").body)
        except SyntaxError:
            return {}
    if isinstance(node, ast.Constant) and node.value is None:
        return {"type": "null"}
    if isinstance(node, ast.Name | ast.Attribute):
        name = ast.unparse(node).rsplit(".", 1)[-1]
        return {"type": _SIMPLE[name]} if name in _SIMPLE else {}
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return {"anyOf": [_annotation_schema(node.left), _annotation_schema(node.right)]}
    if isinstance(node, ast.Subscript):
        return _generic_schema(node)
    return {}


def _generic_schema(node: ast.Subscript) -> dict[str, Any]:
    base = ast.unparse(node.value).rsplit(".", 1)[-1]
    args = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    if base in ("list", "List", "Sequence", "set", "frozenset", "tuple"):
        return {"type": "array", "items": _annotation_schema(args[0])} if base != "tuple" else {"type": "array"}
    if base in ("dict", "Dict", "Mapping"):
        return {"type": "object"}
    if base == "Optional":
        return {"anyOf": [_annotation_schema(args[0]), {"type": "null"}]}
    if base == "Union":
        return {"anyOf": [_annotation_schema(a) for a in args]}
    if base == "Literal":
        return {"enum": [a.value for a in args if isinstance(a, ast.Constant)]}
    if base == "Annotated":
        return _annotation_schema(args[0])
    return {}


def validation_errors(schema: dict[str, Any], value: Any) -> list[str]:
    """Every way `value` breaks `schema`, as 'path: message' lines (empty when it is valid)."""
    from jsonschema import Draft202012Validator  # only runs need it: off every server's start-up
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        return [f"the skill's input_schema is itself invalid: {exc.message}"]
    errors = sorted(Draft202012Validator(schema).iter_errors(value), key=lambda e: list(e.absolute_path))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or 'input'}: {e.message}" for e in errors[:20]]
