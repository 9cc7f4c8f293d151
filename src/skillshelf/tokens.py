"""Token estimates: about four characters a token, plus 10% for JSON punctuation.

Exact tokenisers are model-specific and slow; agents only need the order of magnitude to
decide whether a load is worth its context (see the seed's design decisions).
"""

from __future__ import annotations

import json
import math
from typing import Any

CHARS_PER_TOKEN = 4
JSON_OVERHEAD = 1.1


def estimate_text_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def json_text(value: Any) -> str:
    """`value` as the compact JSON every answer is sent as (and its tokens are estimated from)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)


def estimate_json_tokens(value: Any) -> int:
    return estimate_json_text_tokens(json_text(value))


def estimate_json_text_tokens(serialised: str) -> int:
    """The tokens of a value already serialised by `json_text` (an answer serialises its data once)."""
    return math.ceil(len(serialised) / CHARS_PER_TOKEN * JSON_OVERHEAD)
