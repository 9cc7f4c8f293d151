"""What every kind of source is asked: how its spec is made from an address, how it is fetched, which
lock fields it may have and how they are checked when the lock is read (the lock is input from whoever
last pushed), whether it takes a ref, a token or a signature, and the name it goes by.

A kind is one subclass of `SourceKind` in its own module, listed once in `kinds/__init__.py`'s `KINDS`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, TypedDict

from skillshelf.library.sources.errors import LOCK_FIX, SourceError
from skillshelf.library.sources.spec import (
    ENV_NAME,
    Kind,
    SourceSpec,
    check_address,
    portable_path,
    strip_credentials,
)

if TYPE_CHECKING:
    from skillshelf.library.sources.fetch import Snapshot


class SignatureFields(TypedDict):
    """A git source's required commit signature, as LockedSource keeps it."""

    signed: str | None
    signers: str | None
    signer: str | None


class SourceKind(ABC):
    name: ClassVar[Kind]
    remote: ClassVar[bool] = False  # fetched over the network by a client skillshelf.remote gives (no git)
    refs: ClassVar[bool] = False  # takes --ref (a branch, tag or commit)
    subfolders: ClassVar[bool] = True  # takes --path (a folder inside it)
    signed_commits: ClassVar[bool] = False  # can require signed commits (--require-signed-commit)

    # -- what the user typed -----------------------------------------------------------------------
    def spec(self, url: str, *, ref: str | None = None, subpath: str = "") -> SourceSpec:
        return SourceSpec(self.name, url, ref=ref, subpath=subpath, default_name=self.default_name(url))

    @abstractmethod
    def default_name(self, url: str) -> str:
        """The name a source at `url` goes by, from its address alone."""

    # -- fetching ------------------------------------------------------------------------------------
    @abstractmethod
    def snapshot(self, spec: SourceSpec, root: Path, scratch: Path, commit: str | None) -> Snapshot:
        """The source's content, listed and checked, nothing written (git: at `commit` when given)."""

    def newest_commit(self, spec: SourceSpec, root: Path) -> str | None:
        """The commit its ref names now (one ls-remote), for kinds that have commits; else None."""
        return None

    def networked(self, url: str) -> bool:
        """Whether its locked `url` is an address on the network (kept as written), not a local path."""
        return self.remote

    def locked_url(self, spec: SourceSpec, root: Path) -> str:
        """Its address as the lock keeps it: a URL without credentials, or a portable local path."""
        if self.networked(spec.url):
            return strip_credentials(spec.url)
        return portable_path(Path(spec.url), root)

    # -- the lock: each field this kind may have, checked as `add` would -------------------------------
    def check_url(self, url: str, at: str) -> str:
        try:
            check_address(url)
        except SourceError as exc:
            raise SourceError(f"{at}: url {exc.message}{LOCK_FIX}") from exc
        if self.remote and "://" not in url:
            raise SourceError(f"{at}: url of an {self.name} source is a https URL, not {url!r}{LOCK_FIX}")
        if not self.remote and not self.networked(url) and "://" in url:
            raise SourceError(f"{at}: url of a {self.name} is a local path, not {strip_credentials(url)}{LOCK_FIX}")
        return url

    def check_token_env(self, name: str | None, at: str) -> str | None:
        if name is not None and (not self.remote or not ENV_NAME.match(name)):
            raise SourceError(
                f"{at}: token_env {name!r} must name an environment variable, for an index or mcp source{LOCK_FIX}"
            )
        return name

    def check_signature(self, fields: SignatureFields, at: str) -> SignatureFields:
        if fields["signed"] is None:
            if fields["signers"] is not None or fields["signer"] is not None:
                raise SourceError(f'{at}: signers and signer go with signed = "ssh"{LOCK_FIX}')
            return fields
        if fields["signed"] != "ssh" or not self.signed_commits:
            raise SourceError(f'{at}: signed must be "ssh", and only a git source has signed commits{LOCK_FIX}')
        for key, value in (("signers", fields["signers"]), ("signer", fields["signer"])):
            if value is not None and (not value or any(ord(c) < 0x20 or ord(c) == 0x7F for c in value)):
                raise SourceError(f"{at}: {key} {value!r} must be one line of text{LOCK_FIX}")
        return fields
