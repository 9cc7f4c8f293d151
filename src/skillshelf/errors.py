"""Domain errors with stable codes.

Every failure an agent or a curator can act on is a `SkillshelfError`. Its `code` is part of
the public contract (tools return it in the envelope, the CLI prints it), so codes are only
ever added, never renamed.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    VALIDATION_ERROR = "VALIDATION_ERROR"
    PATTERN_NOT_FOUND = "PATTERN_NOT_FOUND"
    CATEGORY_INVALID = "CATEGORY_INVALID"
    ACCESS_DENIED = "ACCESS_DENIED"
    PROJECT_NOT_FOUND = "PROJECT_NOT_FOUND"
    SESSION_NOT_FOUND = "SESSION_NOT_FOUND"
    CONTENT_TOO_LARGE = "CONTENT_TOO_LARGE"
    FILESYSTEM_ERROR = "FILESYSTEM_ERROR"
    INTERNAL_ERROR = "INTERNAL_ERROR"
    EXECUTION_DISABLED = "EXECUTION_DISABLED"
    NOT_EXECUTABLE = "NOT_EXECUTABLE"
    EXECUTION_TIMEOUT = "EXECUTION_TIMEOUT"
    SKILL_EXECUTION_FAILED = "SKILL_EXECUTION_FAILED"
    TOOL_NOT_AVAILABLE = "TOOL_NOT_AVAILABLE"  # hidden by the view, or no such tool (search mode)
    HOOK_FAILED = "HOOK_FAILED"
    CALL_ABORTED = "CALL_ABORTED"
    RATE_LIMITED = "RATE_LIMITED"  # a caller over its rate (an inner call; the HTTP request itself gets 429)
    STATE_UNAVAILABLE = "STATE_UNAVAILABLE"  # the shared database (database_url) did not answer: retry later


class SkillshelfError(Exception):
    """A failure with a stable code and a message that tells the reader what to do next."""

    def __init__(
        self,
        code: ErrorCode,
        message: str,
        *,
        suggestions: list[str] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.suggestions = suggestions or []
        self.details = details


class PatternNotFoundError(SkillshelfError):
    def __init__(self, skill_id: str, suggestions: list[str]) -> None:
        hint = (
            f" Did you mean {', '.join(repr(s) for s in suggestions)}?"
            if suggestions
            else " Call searchPatterns to find skill ids."
        )
        super().__init__(ErrorCode.PATTERN_NOT_FOUND, f"No skill {skill_id!r}.{hint}", suggestions=suggestions)


class CategoryInvalidError(SkillshelfError):
    def __init__(self, category: str, known: list[str]) -> None:
        listed = ", ".join(known[:20]) if known else "none yet"
        super().__init__(
            ErrorCode.CATEGORY_INVALID,
            f"No category {category!r}. Known categories: {listed}.",
            suggestions=known[:20],
        )
