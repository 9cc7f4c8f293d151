"""Input schemas derived from code without running it."""

from __future__ import annotations

import pytest

from skillshelf.execution.schema import derive_python_schema, function_name, validation_errors


def test_the_named_function_gives_properties_required_and_closed_schema() -> None:
    source = (
        "from typing import Literal, Optional\n"
        "def retry_backoff(attempts: int, base: float = 0.5, mode: Literal['full', 'equal'] = 'full',\n"
        "                  tags: list[str] | None = None, label: Optional[str] = None) -> dict: ...\n"
    )
    schema, entry = derive_python_schema(source, "retry-backoff")
    assert entry == "retry_backoff"
    assert schema == {
        "type": "object",
        "properties": {
            "attempts": {"type": "integer"},
            "base": {"type": "number"},
            "mode": {"enum": ["full", "equal"]},
            "tags": {"anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}]},
            "label": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        },
        "required": ["attempts"],
        "additionalProperties": False,
    }


def test_run_taking_a_pydantic_model_uses_its_fields() -> None:
    source = (
        "from pydantic import BaseModel\n"
        "class Params(BaseModel):\n    url: str\n    retries: int = 3\n"
        "def run(input: Params) -> dict: ...\n"
    )
    schema, entry = derive_python_schema(source, "fetch-page")
    assert entry == "run"
    assert schema == {"type": "object", "properties": {"url": {"type": "string"}, "retries": {"type": "integer"}},
                      "required": ["url"]}  # fmt: skip


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("def run(input: dict) -> dict: ...", ({"type": "object"}, "run")),
        ("x = 1", (None, None)),
        ("def (", (None, None)),
    ],
)
def test_run_with_a_dict_is_open_and_code_without_an_entry_point_has_none(
    source: str, expected: tuple[object, object]
) -> None:
    assert derive_python_schema(source, "anything") == expected


def test_names_map_to_python_functions() -> None:
    assert function_name("retry-backoff") == "retry_backoff"
    assert function_name("x.y") == "x_y"


def test_validation_lists_every_problem_with_its_path() -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "tags": {"type": "array"}}, "required": ["n"]}
    assert validation_errors(schema, {"n": 1}) == []
    assert validation_errors(schema, {"tags": "x"}) == [
        "input: 'n' is a required property",
        "tags: 'x' is not of type 'array'",
    ]
    assert validation_errors({"type": "bogus"}, {})[0].startswith("the skill's input_schema is itself invalid")
