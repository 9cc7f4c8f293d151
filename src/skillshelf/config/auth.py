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


class AuthSettings(BaseModel):
    """Who may call over HTTP: named bearer tokens, the request size limit and a per-token rate limit."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    tokens: dict[str, TokenSettings] = Field(default_factory=dict, description="By token name")
    rate_per_s: float = Field(default=20.0, gt=0, description="Requests per second a token may sustain")
    burst: int = Field(default=60, ge=1, description="Requests a token may make at once before the rate applies")
    max_request_bytes: int = Field(default=1024 * 1024, ge=1024, description="Largest request body accepted")

    @model_validator(mode="after")
    def _names(self) -> AuthSettings:
        for name in self.tokens:
            if not TOKEN_NAME.match(name):
                raise ValueError(f"token name {name!r}: use letters, digits, '.', '_' or '-' (at most 64)")
        return self


def tokens_from_variable(text: str) -> dict[str, TokenSettings]:
    """The tokens of `SKILLSHELF_TOKENS`, as digests: `NAME=TOKEN` entries separated by commas or
    whitespace; `NAME=TOKEN=V1+V2` limits a token to views V1 and V2 (default: the default view).

    A bad entry is named by its position and name, never by its text (which holds the secret).
    """
    tokens: dict[str, TokenSettings] = {}
    for position, entry in enumerate((e for e in re.split(r"[,\s]+", text.strip()) if e), start=1):
        name, _, rest = entry.partition("=")
        token, _, views = rest.partition("=")
        if not TOKEN_NAME.match(name) or len(token) < 16:
            named = f" ({name!r})" if "=" in entry and TOKEN_NAME.match(name) else ""  # no '=': it may be the token
            raise SkillshelfError(
                ErrorCode.VALIDATION_ERROR,
                f"entry {position}{named} is not NAME=TOKEN[=VIEW+VIEW] with a token of 16+ characters",
            )
        view_names = [v for v in views.split("+") if v] or ["default"]
        tokens[name] = TokenSettings(sha256=token_digest(token), views=view_names)
    return tokens
