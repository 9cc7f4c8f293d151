"""Serving a team over HTTP: bearer tokens and the views each may use, hooks, composite tools,
and the local call log."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from skillshelf.errors import ErrorCode, SkillshelfError


class HookSettings(BaseModel):
    """Dotted paths (`package.module:function`) called before and after each tool call of a view."""

    model_config = ConfigDict(extra="forbid")

    pre_call: str | None = None
    post_call: str | None = None
    timeout_s: float = Field(default=5.0, gt=0, le=60)


class CompositeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    type: Literal["string", "integer", "number", "boolean", "array", "object"] = "string"
    description: str = ""
    default: Any = None
    required: bool | None = None  # None: required unless a default is given


class CompositeStep(BaseModel):
    model_config = ConfigDict(extra="forbid")

    tool: str
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="Values; '{inputs.x}' and '{steps.NAME.data...}'"
    )


class ChainStep(CompositeStep):
    name: str


class CompositeTool(BaseModel):
    """One tool made of others: `parallel` steps run at once, or a `chain` runs them in order."""

    model_config = ConfigDict(extra="forbid")

    description: str = ""
    inputs: dict[str, CompositeInput] = Field(default_factory=dict)
    parallel: dict[str, CompositeStep] | None = None
    chain: list[ChainStep] | None = None

    @model_validator(mode="after")
    def _one_shape(self) -> CompositeTool:
        if (self.parallel is None) == (self.chain is None):
            raise ValueError("a composite tool has either `parallel` steps or a `chain`, exactly one")
        return self


class TokenSettings(BaseModel):
    """A bearer token, stored only as the SHA-256 of its text, and the views it may use."""

    model_config = ConfigDict(extra="forbid")

    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    views: list[str] = Field(default_factory=lambda: ["default"])


TOKENS_ENV = "SKILLSHELF_TOKENS"
CONFIG_TOKEN_BYTES = 32  # `skillshelf token new`: 256 random bits
TOKEN_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


def token_digest(token: str) -> str:
    """What the config file stores for a token: the SHA-256 of its text, in hex."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


class AuthSettings(BaseModel):
    """Who may call over HTTP: named bearer tokens, the request size limit and a per-token rate limit."""

    model_config = ConfigDict(extra="forbid")

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

    def with_env(self, env: Mapping[str, str] | None = None) -> AuthSettings:
        """These settings plus the tokens of `SKILLSHELF_TOKENS` (which win a name collision).

        The variable holds entries separated by commas or whitespace, each `NAME=TOKEN` (the default
        view) or `NAME:VIEW+VIEW=TOKEN`; see `parse_env_token`. Only digests are kept.
        """
        text = (os.environ if env is None else env).get(TOKENS_ENV, "").strip()
        if not text:
            return self
        tokens = dict(self.tokens)
        for entry in re.split(r"[,\s]+", text):
            if entry:
                name, token, views = parse_env_token(entry)
                tokens[name] = TokenSettings(sha256=token_digest(token), views=views)
        return self.model_copy(update={"tokens": tokens})


ENV_VIEW = re.compile(r"^[A-Za-z0-9_-]{1,64}$")  # a view name (config/views.py VIEW_NAME)


def parse_env_token(entry: str) -> tuple[str, str, list[str]]:
    """One `SKILLSHELF_TOKENS` entry: (name, token, views).

    `NAME:VIEW+VIEW=TOKEN`: everything after the first `=` is the token, verbatim, so a token may
    hold any character but the entry separators (commas, whitespace). The older `NAME=TOKEN=VIEW+VIEW`
    still works: the text after the last `=` is read as views only when it is a `+`-joined list of
    view names, so base64 padding (`abc==`) stays part of the token.
    """
    head, equals, token = entry.partition("=")
    name, colon, listed = head.partition(":")
    views = listed.split("+") if colon else []
    if not colon and "=" in token:
        before, _, tail = token.rpartition("=")
        if tail and all(ENV_VIEW.match(v) for v in tail.split("+")):
            token, views = before, tail.split("+")
    if not equals or not TOKEN_NAME.match(name) or len(token) < 16 or not all(ENV_VIEW.match(v) for v in views):
        raise SkillshelfError(
            ErrorCode.VALIDATION_ERROR,
            f"{TOKENS_ENV}: {name or entry[:8]!r} is not NAME=TOKEN or NAME:VIEW+VIEW=TOKEN with a token of "
            "16+ characters and view names of letters, digits, '_' or '-'",
        )
    return name, token, views or ["default"]


class CallLogSettings(BaseModel):
    """The local call log: what was called and how it went, never arguments or contents."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    path: Path | None = None  # default: calls.jsonl in the user state folder
    max_bytes: int = Field(default=5 * 1024 * 1024, ge=4096, description="Rotate to calls.jsonl.1 past this size")
