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


def estimate_json_tokens(value: Any) -> int:
    serialised = json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    return math.ceil(len(serialised) / CHARS_PER_TOKEN * JSON_OVERHEAD)
