"""The uniform result envelope every tool returns.

`{"success": true, "data": ..., "metadata": {"tokensUsed", "durationMs", "resultsCount"}}` or
`{"success": false, "error": {"code", "message", "suggestions"}, "metadata": ...}`. Built here,
without MCP, so the CLI and tests can produce exactly what the tools send.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, PrivateAttr
from pydantic.alias_generators import to_camel

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.tokens import estimate_json_text_tokens, json_data_text, json_text

T = TypeVar("T", bound=BaseModel)
D = TypeVar("D")  # an envelope's data: a model, or a union of models


class WireModel(BaseModel):
    """Python names in code, camelCase on the wire (the seed's tool contract is camelCase)."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, serialize_by_alias=True)


class ErrorInfo(WireModel):
    code: str
    message: str
    suggestions: list[str] | None = None
    details: dict[str, Any] | None = None  # machine-readable specifics, e.g. a failed run's exit code


class EnvelopeMetadata(WireModel):
    tokens_used: int
    duration_ms: float
    results_count: int | None = None


class Envelope(WireModel, Generic[D]):
    success: bool
    data: D | None = None
    error: ErrorInfo | None = None
    metadata: EnvelopeMetadata
    # What `success` dumped of `data` for the wire, and its JSON text: (the data object, its wire form, its text).
    _dumped: tuple[Any, dict[str, Any], str] | None = PrivateAttr(default=None)

    def to_wire(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def remember_dump(self, wire_data: dict[str, Any], text: str) -> Envelope[D]:
        """Keep the data's wire form and its `json_text`, as `success` made them, for `to_wire_and_text`."""
        self._dumped = (self.data, wire_data, text)
        return self

    def to_wire_and_text(self) -> tuple[dict[str, Any], str]:
        """The wire form and its compact JSON text (`json_text`), as a tool answers them.

        A success reuses the data's wire form and text that `success` made for the token estimate: the data was
        serialised three times an answer (dumped for the estimate, dumped again with the envelope, encoded
        again for the text), 15-30 us a call (issue 36). The bytes are the same as `json_text(to_wire())`;
        anything not as `success` left it (other data, a failure) is dumped afresh."""
        dumped = self._dumped
        if dumped is None or dumped[0] is not self.data or not self.success or self.error is not None:
            wire = self.to_wire()
            return wire, json_text(wire)
        metadata = self.metadata.model_dump(mode="json", by_alias=True, exclude_none=True)
        text = '{"success":true,"data":' + dumped[2] + ',"metadata":' + json_data_text(metadata) + "}"
        return {"success": True, "data": dumped[1], "metadata": metadata}, text


# The one parametrised class every envelope is built as. pydantic keeps parametrised classes only while
# something refers to them: `Envelope[T]` built per call was collected with its last instance and built
# again (schema and all) under load, a few percent of a busy server's time.
AnyEnvelope = Envelope[Any]


def _elapsed_ms(started: float) -> float:
    return round((time.perf_counter() - started) * 1000, 3)


def success(data: T, started: float, results_count: int | None = None) -> Envelope[Any]:
    wire_data = data.model_dump(mode="json", by_alias=True, exclude_none=True)
    text = json_data_text(wire_data)
    return AnyEnvelope(
        success=True,
        data=data,
        metadata=EnvelopeMetadata(
            tokens_used=estimate_json_text_tokens(text),
            duration_ms=_elapsed_ms(started),
            results_count=results_count,
        ),
    ).remember_dump(wire_data, text)


def failure(
    code: str,
    message: str,
    started: float,
    suggestions: list[str] | None = None,
    details: dict[str, Any] | None = None,
) -> Envelope[Any]:
    return AnyEnvelope(
        success=False,
        error=ErrorInfo(code=code, message=message, suggestions=suggestions or None, details=details),
        metadata=EnvelopeMetadata(tokens_used=0, duration_ms=_elapsed_ms(started)),
    )


def run_service(call: Callable[[], T], count: Callable[[T], int | None] | None = None) -> Envelope[Any]:
    """Run a domain call and wrap its outcome; domain failures become error envelopes."""
    started = time.perf_counter()
    try:
        data = call()
    except SkillshelfError as exc:
        return failure(exc.code, exc.message, started, exc.suggestions, exc.details)
    return success(data, started, count(data) if count else None)


async def run_service_async(call: Callable[[], Awaitable[T]]) -> Envelope[Any]:
    """`run_service` for a coroutine (a skill run that must not block the event loop)."""
    started = time.perf_counter()
    try:
        data = await call()
    except SkillshelfError as exc:
        return failure(exc.code, exc.message, started, exc.suggestions, exc.details)
    return success(data, started)


INTERNAL_ERROR_MESSAGE = (
    "skillshelf hit an unexpected internal error; the details are in the server log. "
    "Retry once; if it persists, report it with the log."
)


def internal_failure(started: float) -> Envelope[Any]:
    return failure(ErrorCode.INTERNAL_ERROR, INTERNAL_ERROR_MESSAGE, started)
