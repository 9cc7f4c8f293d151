"""The one error a source operation raises: it names the source and what to do."""

from __future__ import annotations

from skillshelf.errors import ErrorCode, SkillshelfError


class SourceError(SkillshelfError):
    """A source that cannot be added, synced, updated or removed; the library is left as it was."""

    def __init__(self, message: str, code: ErrorCode = ErrorCode.VALIDATION_ERROR) -> None:
        super().__init__(code, message)


# What every refusal of a lock entry ends with: the lock is shared, so the fix is the committed one.
LOCK_FIX = "; restore skillshelf.lock from version control (it is read with the rules `add` follows)"
