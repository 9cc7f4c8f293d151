"""Turn arbitrary text into a URL- and filename-safe ASCII slug."""

from __future__ import annotations

import json
import re
import sys
import unicodedata
from typing import Any

# Letters that Unicode decomposition does not reduce to ASCII.
TRANSLITERATIONS = str.maketrans(
    {
        "ß": "ss",
        "ẞ": "SS",
        "æ": "ae",
        "Æ": "AE",
        "œ": "oe",
        "Œ": "OE",
        "ø": "o",
        "Ø": "O",
        "đ": "d",
        "Đ": "D",
        "ł": "l",
        "Ł": "L",
        "þ": "th",
        "Þ": "Th",
        "ð": "d",
        "Ð": "D",
        "ı": "i",
    }
)
NON_ALNUM = re.compile(r"[^A-Za-z0-9]+")
APOSTROPHES = re.compile(r"(?<=[A-Za-z])'(?=[A-Za-z])")


def slugify(text: str, max_length: int = 80, separator: str = "-", lowercase: bool = True) -> str:
    """Return an ASCII slug of ``text``: letters and digits joined by ``separator``.

    Accents are stripped (``"Crème brûlée"`` -> ``"creme-brulee"``), apostrophes inside words are
    dropped (``"Don't"`` -> ``"dont"``), every other run of punctuation or whitespace becomes one
    separator, and the result is cut to ``max_length`` at a word boundary when possible.
    Scripts with no ASCII transliteration (Greek, Cyrillic, CJK) are dropped, so the result can
    be empty: callers must handle ``""``.

    Raises:
        ValueError: if ``max_length`` < 1 or ``separator`` is empty or contains letters/digits.
    """
    if max_length < 1:
        raise ValueError("max_length must be at least 1")
    if not separator or any(ch.isalnum() for ch in separator):
        raise ValueError("separator must be non-empty punctuation, such as '-' or '_'")
    normalized = unicodedata.normalize("NFKD", text.translate(TRANSLITERATIONS))
    ascii_text = normalized.encode("ascii", "ignore").decode("ascii")
    ascii_text = APOSTROPHES.sub("", ascii_text)
    if lowercase:
        ascii_text = ascii_text.lower()
    words = [word for word in NON_ALNUM.split(ascii_text) if word]
    slug = separator.join(words)
    if len(slug) <= max_length:
        return slug
    cut = slug[:max_length]
    if slug[max_length:].startswith(separator):
        return cut
    boundary = cut.rfind(separator)
    if boundary > 0:
        return cut[:boundary]
    # A single word longer than max_length: hard cut (words never contain separator characters).
    return cut.rstrip(separator)


def unique_slug(text: str, taken: set[str], max_length: int = 80, separator: str = "-") -> str:
    """Return a slug of ``text`` not in ``taken``, appending ``-2``, ``-3``... as needed.

    Empty slugs become ``"item"``. The suffix is kept within ``max_length``.
    """
    base = slugify(text, max_length=max_length, separator=separator) or "item"
    if base not in taken:
        return base
    counter = 2
    while True:
        suffix = f"{separator}{counter}"
        candidate = base[: max_length - len(suffix)].rstrip(separator) + suffix
        if candidate not in taken:
            return candidate
        counter += 1


def run(input: dict[str, Any]) -> dict[str, Any]:
    """JSON entry point.

    Input keys: ``text`` (required), ``max_length``, ``separator``, ``lowercase`` (optional).
    Returns ``{"slug": str}``.
    """
    return {"slug": slugify(**input)}


if __name__ == "__main__":
    try:
        result = run(json.load(sys.stdin))
    except (ValueError, TypeError) as exc:
        print(json.dumps({"error": str(exc)}))
        sys.exit(1)
    print(json.dumps(result))
