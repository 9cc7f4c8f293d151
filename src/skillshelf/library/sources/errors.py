"""The one error a source operation raises: it names the source and what to do."""

from __future__ import annotations

from skillshelf.errors import ErrorCode, SkillshelfError


class SourceError(SkillshelfError):
    """A source that cannot be added, synced, updated or removed; the library is left as it was."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.VALIDATION_ERROR) -> None:
        super().__init__(code, message)
