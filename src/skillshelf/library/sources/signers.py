"""The allowed-signers file the SSH signatures are checked against: a lock's (signing.py) and a git
source's commits (kinds/git.py). Below the lock: a git source's signature is checked while it is fetched."""

from __future__ import annotations

from pathlib import Path

from skillshelf.library.sources import git
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.spec import STATE_DIR

ALLOWED_SIGNERS = "allowed_signers"


def allowed_signers(root: Path, given: Path | None = None) -> Path:
    """The allowed-signers file: `given`, else the library's `.skillshelf/allowed_signers`, else git's
    `gpg.ssh.allowedSignersFile`; a SourceError saying how to set one up when there is none."""
    if given is not None:
        path = given.expanduser()
        if not path.is_file():
            raise SourceError(f"no allowed-signers file at {given}")
        return path
    own = root / STATE_DIR / ALLOWED_SIGNERS
    if own.is_file():
        return own
    configured = _git_allowed_signers(root)
    if configured is not None and configured.is_file():
        return configured
    raise SourceError(
        f"no allowed-signers file: write one at {own} (a line per key: `EMAIL ssh-ed25519 AAAA...`), set git's "
        "gpg.ssh.allowedSignersFile, or pass --allowed-signers FILE (docs/curating.md, Signing the lock)"
    )


def _git_allowed_signers(root: Path) -> Path | None:
    value = git.config_value(root, "gpg.ssh.allowedSignersFile")
    if value is None:
        return None
    path = Path(value).expanduser()
    return path if path.is_absolute() else root / path
