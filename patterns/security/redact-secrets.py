"""Redact secrets (tokens, passwords, keys, credentials in URLs) from text before it is logged.

Pattern-based and deliberately biased towards false positives: masking a harmless value costs
little, leaking a credential into log storage costs a lot. It is a safety net, not a reason to
log sensitive objects in the first place.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Callable
from typing import Any

# (kind, pattern, group to mask or None for the whole match). Order matters: specific first.
PATTERNS: tuple[tuple[str, re.Pattern[str], str | None], ...] = (
    (
        "private_key",
        re.compile(
            r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY-----.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY-----",
            re.DOTALL,
        ),
        None,
    ),
    ("jwt", re.compile(r"\beyJ[A-Za-z0-9_-]{5,}\.eyJ[A-Za-z0-9_-]{5,}\.[A-Za-z0-9_-]+"), None),
    ("aws_access_key_id", re.compile(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"), None),
    ("github_token", re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{36,}|github_pat_[A-Za-z0-9_]{22,})\b"), None),
    ("slack_token", re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), None),
    ("stripe_key", re.compile(r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}\b"), None),
    ("google_api_key", re.compile(r"\bAIza[0-9A-Za-z_-]{35}\b"), None),
    ("url_credentials", re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s/:@]+:(?P<secret>[^\s@/]+)@"), "secret"),
    (
        "authorization",
        re.compile(
            r"(?i)(?:\b(?:proxy-)?authorization\s*[:=]\s*(?:(?:bearer|basic|token|digest)\s+)?|\bbearer\s+)"
            r"(?P<secret>[A-Za-z0-9._~+/=-]{8,})"
        ),
        "secret",
    ),
    (
        "assignment",
        re.compile(
            r"(?i)(?P<key>[\w.-]*(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|"
            r"private[_-]?key|client[_-]?secret|credentials?)[\w.-]*)"
            r"(?P<sep>[\"']?\s*[:=]\s*[\"']?)(?P<secret>[^\s\"',;&}]+)"
        ),
        "secret",
    ),
)


# Markup that closes after a value: `password=x` in inline code, **token=x** in bold, (api_key=x) in a
# parenthesis end with markup, not with the secret. Brackets close what they open; the others close a run
# of the same characters (a code or emphasis span).
BRACKETS = {")": "(", "]": "[", ">": "<"}
SPANS = "`*_~"
PROSE_END = ".,!?:"  # after markup that closes, a sentence's end: `token=x`.


def _pending(line: str) -> dict[str, int]:
    """The closers ``line`` leaves open: one per unclosed bracket and, for a span character, the length of
    its last run when the line holds an odd number of runs of it."""
    pending = {close: line.count(open_) - line.count(close) for close, open_ in BRACKETS.items()}
    for char in SPANS:
        runs = re.findall(re.escape(char) + "+", line)
        pending[char] = len(runs[-1]) if len(runs) % 2 else 0
    return pending


def _markup_tail(before: str, secret: str) -> int:
    """How many characters at the end of ``secret`` close markup that ``before`` (the text before the key,
    on its line) opened, with a sentence's end after them: those stay, so masking never eats a closing
    backtick or bracket. At least one character of the secret is always masked."""
    pending = _pending(before.rsplit("\n", 1)[-1])
    prose = len(secret) - len(secret.rstrip(PROSE_END))
    kept = prose
    while kept < len(secret) - 1 and pending.get(closer := secret[-1 - kept], 0) > 0:
        pending[closer] -= 1
        kept += 1
    return kept if kept > prose else 0  # a bare trailing '.' may be the secret's own


def _compile_extra(extra_patterns: list[str] | None) -> list[re.Pattern[str]]:
    compiled: list[re.Pattern[str]] = []
    for pattern in extra_patterns or []:
        try:
            regex = re.compile(pattern)
        except re.error as exc:
            raise ValueError(f"invalid extra pattern {pattern!r}: {exc}") from None
        if regex.match(""):
            raise ValueError(f"extra pattern {pattern!r} matches the empty string")
        compiled.append(regex)
    return compiled


def redact_secrets(
    text: str,
    mask: str = "[REDACTED]",
    extra_patterns: list[str] | None = None,
) -> dict[str, Any]:
    """Replace secrets in ``text`` with ``mask``.

    Keys and URL user names are kept so the line stays useful (``password=[REDACTED]``,
    ``postgres://app:[REDACTED]@db``); only the secret part is replaced, and markup that closes
    around it stays (```password=[REDACTED]```, ``**token=[REDACTED]**``, ``(api_key=[REDACTED])``). ``extra_patterns``
    are regular expressions whose whole match is masked (kind ``"custom"``).

    Returns ``{"text": str, "count": int, "kinds": sorted list of kinds found}``.

    Raises:
        ValueError: if ``mask`` is empty or an extra pattern is invalid or matches "".
    """
    if not mask:
        raise ValueError("mask must not be empty")
    count = 0
    kinds: set[str] = set()

    def replacer(kind: str, group: str | None) -> Callable[[re.Match[str]], str]:
        def replace(match: re.Match[str]) -> str:
            nonlocal count
            secret = match.group(group) if group else match.group(0)
            if mask in secret:
                return match.group(0)  # already redacted by an earlier pattern
            count += 1
            kinds.add(kind)
            if group is None:
                return mask
            start, end = match.span(group)
            end -= _markup_tail(match.string[: match.start()], secret)  # mask the value, not markup around it
            offset = match.start()
            whole = match.group(0)
            return whole[: start - offset] + mask + whole[end - offset :]

        return replace

    for kind, pattern, group in PATTERNS:
        text = pattern.sub(replacer(kind, group), text)
    for regex in _compile_extra(extra_patterns):
        text = regex.sub(replacer("custom", None), text)
    return {"text": text, "count": count, "kinds": sorted(kinds)}


class RedactingFilter(logging.Filter):
    """A logging filter that redacts the formatted message of every record it sees.

    Attach it to handlers (not loggers) so records from all loggers pass through it:
    ``handler.addFilter(RedactingFilter())``. Exception text is not covered; format tracebacks
    with a redacting formatter if they may contain secrets.
    """

    def __init__(self, mask: str = "[REDACTED]", extra_patterns: list[str] | None = None) -> None:
        super().__init__()
        self.mask = mask
        self.extra_patterns = extra_patterns
        _compile_extra(extra_patterns)  # fail at configuration time, not on first log line

    def filter(self, record: logging.LogRecord) -> bool:
        result = redact_secrets(record.getMessage(), self.mask, self.extra_patterns)
        if result["count"]:
            record.msg = result["text"]
            record.args = None
        return True


def run(input: dict[str, Any]) -> dict[str, Any]:
    """JSON entry point.

    Input keys: ``text`` (required), ``mask`` and ``extra_patterns`` (optional).
    Returns ``{"text": str, "count": int, "kinds": [...]}``.
    """
    return redact_secrets(**input)


if __name__ == "__main__":
    try:
        result = run(json.load(sys.stdin))
    except (ValueError, TypeError) as exc:
        print(json.dumps({"error": str(exc)}))
        sys.exit(1)
    print(json.dumps(result))
