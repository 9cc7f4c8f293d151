"""Who may call over HTTP: bearer tokens (stored as digests) and the views each may use, and the
request limits."""

from __future__ import annotations

import hashlib
import re

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skillshelf.errors import ErrorCode, SkillshelfError


class TokenSettings(BaseModel):
    """A bearer token, stored only as the SHA-256 of its text, and the views it may use."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    views: list[str] = Field(default_factory=lambda: ["default"])


CONFIG_TOKEN_BYTES = 32  # `skillshelf token new`: 256 random bits
TOKEN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def token_digest(token: str) -> str:
    """What the config file stores for a token: the SHA-256 of its text, in hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


MAX_REQUEST_BYTES_CEILING = 256 * 1024 * 1024  # a body is read into memory before it is parsed


class AuthSettings(BaseModel):
    """Who may call over HTTP: named bearer tokens, the request size limit and a per-token rate limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: dict[str, TokenSettings] = Field(default_factory=dict, description="By token name")
    rate_per_s: float = Field(default=20.0, gt=0, description="Requests per second a token may sustain")
    burst: int = Field(default=60, ge=1, description="Requests a token may make at once before the rate applies")
    max_request_bytes: int = Field(
        default=1024 * 1024, ge=1024, le=MAX_REQUEST_BYTES_CEILING, description="Largest request body accepted"
    )

    @model_validator(mode="after")
    def _names(self) -> AuthSettings:
        for name in self.tokens:
            if not TOKEN_NAME.match(name):
                raise ValueError(f"token name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)")
        return self


def tokens_from_variable(text: str) -> dict[str, TokenSettings]:
    """The tokens of `SKILLSHELF_TOKENS`, as digests: entries separated by commas or whitespace, each
    `NAME=TOKEN` (the default view) or `NAME:VIEW+VIEW=TOKEN` (see `parse_token_entry`).

    A bad entry is named by its position and name, never by its text (which holds the secret).
    """
    tokens: dict[str, TokenSettings] = {}
    for position, entry in enumerate((e for e in re.split(r"[,\s]+", text.strip()) if e), start=1):
        parsed = parse_token_entry(entry)
        if parsed is None:
            name = entry.partition("=")[0].partition(":")[0]
            named = f" ({name!r})" if "=" in entry and TOKEN_NAME.match(name) else ""  # no '=': it may be the token
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR,
                f"entry {position}{named} is not NAME=TOKEN or NAME:VIEW+VIEW=TOKEN with a token of 16+ characters "
                "and view names of letters, digits, '_' or '-'",
            )
        name, token, views = parsed
        tokens[name] = TokenSettings(sha256=token_digest(token), views=views)
    return tokens


ENTRY_VIEW = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a view name (config/views.py VIEW_NAME)


def parse_token_entry(entry: str) -> tuple[str, str, list[str]] | None:
    """One `SKILLSHELF_TOKENS` entry: (name, token, views), or None when it is malformed.

    `NAME:VIEW+VIEW=TOKEN`: everything after the first `=` is the token, verbatim, so a token may hold
    any character but the entry separators (commas, whitespace). The older `NAME=TOKEN=VIEW+VIEW` still
    works: the text after the last `=` is read as views only when it is a `+`-joined list of view names,
    so base64 padding (`abc==`) stays part of the token.
    """
    head, equals, token = entry.partition("=")
    name, colon, listed = head.partition(":")
    views = listed.split("+") if colon else []
    if not colon and "=" in token:
        before, _, tail = token.rpartition("=")
        if tail and all(ENTRY_VIEW.match(v) for v in tail.split("+")):
            token, views = before, tail.split("+")
    if not equals or not TOKEN_NAME.match(name) or len(token) < 16 or not all(ENTRY_VIEW.match(v) for v in views):
        return None
    return name, token, views or ["default"]
