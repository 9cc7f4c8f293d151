"""Settings keys as paths through a pydantic model, and `SKILLSHELF_*` variables as those paths.

A variable is `SKILLSHELF_` plus a key, nested keys joined by `__` (`SKILLSHELF_EXECUTION__TIMEOUT_S`
is `execution.timeout_s`); below a table of named entries (`views`) any name is a key. Everything
here is read from the model, so a new field is a new key and a new variable with nothing else to
list, and a misspelt key or variable is answered with the closest real one.
"""

from __future__ import annotations

import difflib
import json
import types
from collections.abc import Iterator
from typing import Any, Union, get_args, get_origin

from pydantic import BaseModel

PREFIX = "SKILLSHELF_"
NESTING = "__"
KeyPath = tuple[str | int, ...]


class UnknownKey(Exception):
    """A key the model does not have at `depth` of `path`; `suggestion` is the closest one, if any."""

    def __init__(self, path: KeyPath, depth: int, suggestion: str | None) -> None:
        super().__init__(".".join(map(str, path)))
        self.path = path
        self.depth = depth
        self.suggestion = suggestion


def _unoptional(annotation: Any) -> Any:
    """`X | None` as X."""
    if get_origin(annotation) in (Union, types.UnionType):
        args = [a for a in get_args(annotation) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return annotation


def model_of(annotation: Any) -> type[BaseModel] | None:
    found = _unoptional(annotation)
    return found if isinstance(found, type) and issubclass(found, BaseModel) else None


def fields_by_key(model: type[BaseModel]) -> dict[str, Any]:
    """The model's fields by the key a user writes (the alias, where there is one)."""
    return {info.alias or name: info for name, info in model.model_fields.items()}


def keys_at(annotation: Any) -> list[str]:
    model = model_of(annotation)
    return list(fields_by_key(model)) if model else []


def child(annotation: Any, key: str | int) -> Any:
    """The type of `key` below `annotation`; raises KeyError when there is no such key."""
    inner = _unoptional(annotation)
    model = model_of(inner)
    if model is not None:
        if isinstance(key, str) and key in (fields := fields_by_key(model)):
            return fields[key].annotation
        raise KeyError(key)
    if get_origin(inner) is dict and isinstance(key, str):
        return get_args(inner)[1]
    if get_origin(inner) is list and isinstance(key, int):
        return get_args(inner)[0]
    raise KeyError(key)


def type_at(model: type[BaseModel], path: KeyPath) -> Any:
    """The type at `path`; raises UnknownKey naming the first wrong key and its closest neighbour."""
    annotation: Any = model
    for depth, key in enumerate(path):
        try:
            annotation = child(annotation, key)
        except KeyError:
            raise UnknownKey(path, depth, closest(str(key), keys_at(annotation))) from None
    return annotation


def closest(word: str, candidates: list[str]) -> str | None:
    found = difflib.get_close_matches(word, candidates, n=1, cutoff=0.7)
    return found[0] if found else None


def variable_for(path: KeyPath) -> str:
    return PREFIX + NESTING.join(str(key).upper() for key in path)


def path_of(name: str) -> tuple[str, ...]:
    """`SKILLSHELF_EXECUTION__TIMEOUT_S` -> ("execution", "timeout_s") (variables are read case-blind)."""
    return tuple(name[len(PREFIX) :].lower().split(NESTING))


def variables(model: type[BaseModel], above: tuple[str, ...] = ()) -> Iterator[str]:
    """Every variable that sets a key of `model`: each key, and each key of its nested tables."""
    for key, info in fields_by_key(model).items():
        path = (*above, key)
        yield variable_for(path)
        nested = model_of(info.annotation)
        if nested is not None:
            yield from variables(nested, path)


def is_composite(annotation: Any) -> bool:
    inner = _unoptional(annotation)
    return model_of(inner) is not None or get_origin(inner) in (list, dict)


def decode(annotation: Any, text: str) -> Any:
    """A variable's text as the value of its key: a list or a table is written as JSON (`["a", "b"]`,
    `{"k": 1}`); anything else, and a list of paths written `a:b`, is passed as text for the model
    to convert. Raises ValueError for broken JSON."""
    if is_composite(annotation) and text.lstrip()[:1] in ("[", "{"):
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"is not valid JSON ({exc.msg} at character {exc.pos})") from exc
    return text


def leaves(value: Any, above: KeyPath = ()) -> Iterator[tuple[KeyPath, Any]]:
    """Each (key path, value) of a dumped model; a list, and an empty table, is one value."""
    if isinstance(value, dict) and value:
        for key, item in value.items():
            yield from leaves(item, (*above, key))
    else:
        yield above, value
