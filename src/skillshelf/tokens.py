"""Token estimates: about four characters a token, plus 10% for JSON punctuation.

Exact tokenisers are model-specific and slow; agents only need the order of magnitude to
decide whether a load is worth its context (see the seed's design decisions).
"""

from __future__ import annotations

import json
import math
from typing import Any

import pydantic_core

CHARS_PER_TOKEN = 4
JSON_OVERHEAD = 1.1


def estimate_text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def json_text(value: Any) -> str:
    """`value` as the compact JSON every answer is sent as (and its tokens are estimated from)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def json_data_text(value: Any) -> str:
    """`json_text` of a value made of JSON's own types alone (dict with text keys, list, str, int, float, bool,
    None: a model's `model_dump(mode="json")`), the same text by pydantic-core's encoder, in about a third of
    json.dumps' time for a load's data (issue 36: 0.88x a repeat load's instructions on its worker thread).

    The encoders agree on every such value but a float under 1e-4 (and a lone surrogate, which pydantic-core
    refuses): when its text holds one, or might, json.dumps writes it (tests/test_envelope.py compares both)."""
    try:
        text = pydantic_core.to_json(value).decode()
    except (pydantic_core.PydanticSerializationError, ValueError, TypeError):
        return json_text(value)
    return text if written_as_python(text) else json_text(value)


def written_as_python(text: str) -> bool:
    """Whether pydantic-core's JSON `text` holds no number json.dumps writes otherwise: a float under 1e-4
    ('1e-9', '0.00001' for Python's '1e-09', '1e-05'). Text that only looks like one (inside a string) answers
    False too: json.dumps writes that answer, the same. By substring search: a regular expression over a load's
    text took longer than json.dumps itself."""
    if "0.0000" in text:
        return False
    at = text.find("e-")
    while at != -1:
        if at and "0" <= text[at - 1] <= "9":
            return False
        at = text.find("e-", at + 2)
    return True


def estimate_json_tokens(value: Any) -> int:
    return estimate_json_text_tokens(json_text(value))


def estimate_json_text_tokens(serialised: str) -> int:
    """The tokens of a value already serialised by `json_text` (an answer serialises its data once)."""
    return math.ceil(len(serialised) / CHARS_PER_TOKEN * JSON_OVERHEAD)
