"""The network kinds that are not git: an Agent Skills discovery index (`index`) and another MCP server's
Skills extension (`mcp`). Each is fetched whole by its client (given by skillshelf.remote, imported only
when such a source is fetched), every file checked against its listed digest (sources/remote.py); a
bearer token is read from the variable --token-env names."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlsplit

from skillshelf.library.sources.fetch import Snapshot, remote_snapshot
from skillshelf.library.sources.kinds.base import SourceKind
from skillshelf.library.sources.spec import SourceSpec


class _Remote(SourceKind):
    remote = True

    def default_name(self, url: str) -> str:
        return (urlsplit(url.removeprefix("mcp+")).hostname or "remote").removeprefix("www.")

    def snapshot(self, spec: SourceSpec, root: Path, scratch: Path, commit: str | None) -> Snapshot:
        return remote_snapshot(spec)


class Index(_Remote):
    name = "index"


class Mcp(_Remote):
    name = "mcp"
