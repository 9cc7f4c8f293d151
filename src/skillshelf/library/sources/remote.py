"""Sources on the network that are not git: a discovery index (`index`) and another MCP server's Skills
extension (`mcp`).

library/ imports nothing of MCP or HTTP (tests/test_architecture.py), so the client that fetches each
kind lives at the edge (skillshelf.remote) and is given here with `register_fetcher`; the rules every
fetched byte meets are here, once for both: a digest is checked against its listing before a file is
kept (`verified`), an archive is opened with the checks every archive source gets (`unpack`), names and
paths are the library's (`RemoteFiles.add`), and the whole is bounded like any source.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from skillshelf.library.skill.layouts import valid_name
from skillshelf.library.sources.archive import MAX_SOURCE_BYTES, MAX_SOURCE_ENTRIES, ZipSource, safe_name
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.spec import Kind, SourceSpec, strip_credentials

DIGEST_PREFIX = "sha256:"


@dataclass
class RemoteFiles:
    """What a remote source holds: '<skill>/<path>' -> bytes, every one checked before it was added."""

    label: str
    files: dict[str, bytes] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    total: int = 0

    def check(self, skill: str, path: str) -> str:
        """Where a file goes ('<skill>/<path>'): checked before it is fetched, so a name leads nowhere else."""
        if not isinstance(skill, str) or not valid_name(skill):
            raise SourceError(f"{self.label} names a skill {skill!r}, which breaks the Agent Skills naming rules")
        return f"{skill}/{safe_name(path, self.label)}"

    def add(self, skill: str, path: str, data: bytes) -> None:
        key = self.check(skill, path)
        if key in self.files:
            raise SourceError(f"{self.label} lists {key} twice; nothing was installed from it")
        self.total += len(data)
        if len(self.files) >= MAX_SOURCE_ENTRIES or self.total > MAX_SOURCE_BYTES:
            raise SourceError(f"{self.label} holds more than {MAX_SOURCE_ENTRIES} files or {MAX_SOURCE_BYTES} bytes")
        self.files[key] = data


Fetcher = Callable[[SourceSpec, "str | None"], RemoteFiles]  # (the source, its token) -> its files
_FETCHERS: dict[Kind, Fetcher] = {}  # a network kind (kinds/remote.py) -> its client


def register_fetcher(kind: Kind, fetcher: Fetcher) -> None:
    """Give the client that fetches sources of `kind` (skillshelf.remote does, for the command line)."""
    _FETCHERS[kind] = fetcher


def fetch_remote(spec: SourceSpec) -> RemoteFiles:
    fetcher = _FETCHERS.get(spec.kind)
    if fetcher is None:
        raise SourceError(f"{spec.public_url}: this program cannot fetch {spec.kind} sources (no client for them)")
    return fetcher(spec, token_of(spec))


def token_of(spec: SourceSpec) -> str | None:
    """The bearer token in the variable `--token-env` named (kept in the lock by name, never by value)."""
    if spec.token_env is None:
        return None
    token = os.environ.get(spec.token_env, "").strip()
    if not token:
        raise SourceError(
            f"{spec.public_url} needs the token in ${spec.token_env} (--token-env), and it is not set; "
            "set it and run the command again"
        )
    return token


def verified(data: bytes, digest: object, what: str, label: str) -> bytes:
    """`data` when its sha256 is the `sha256:<hex>` its listing gave; otherwise refused, naming the file."""
    if not isinstance(digest, str) or not digest.startswith(DIGEST_PREFIX):
        raise SourceError(f"{label} gives {what} no sha256 digest; nothing was installed from it")
    actual = DIGEST_PREFIX + hashlib.sha256(data).hexdigest()
    if not hmac.compare_digest(actual, digest.lower()):
        raise SourceError(
            f"{what} from {strip_credentials(label)} does not match its digest (listed {digest}, got {actual}): "
            "it was changed on the way or on the server; nothing was installed from it"
        )
    return data


def unpack(data: bytes, label: str) -> dict[str, bytes]:
    """A zip's files (path -> bytes), opened with every archive source's checks (archive.py): no link out,
    no `..`, bounded sizes and ratios."""
    with tempfile.TemporaryDirectory(prefix="skillshelf-remote-") as scratch:
        path = Path(scratch) / "artifact.zip"
        path.write_bytes(data)
        archive = ZipSource(path, label)
        try:
            return {m.path: archive.read(m) for m in archive.members if m.kind != "link"}
        finally:
            archive.close()
