"""git: a repository by URL (https, ssh, git, file), `user@host:path`, or a local one; fetched one commit
deep (fetch.git_snapshot), its commit pinned, its commits' SSH signatures checkable."""

from __future__ import annotations

from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

from skillshelf.library.sources import git
from skillshelf.library.sources.fetch import Snapshot, git_snapshot
from skillshelf.library.sources.kinds.base import SourceKind
from skillshelf.library.sources.spec import SourceSpec, is_local_git, is_scp_like, resolve_local


class Git(SourceKind):
    name = "git"
    refs = True
    signed_commits = True

    def default_name(self, url: str) -> str:
        repo = urlsplit(url).path if "://" in url else url.split(":", 1)[-1] if is_scp_like(url) else url
        return PurePosixPath(repo.rstrip("/")).name.removesuffix(".git") or "source"

    def networked(self, url: str) -> bool:
        return not is_local_git(url)

    def fetch_url(self, spec: SourceSpec, root: Path) -> str:
        """What git is given: a local repository as a file:// URL, so it is fetched shallow like any other."""
        return resolve_local(spec.url, root).as_uri() if is_local_git(spec.url) else spec.url

    def snapshot(self, spec: SourceSpec, root: Path, scratch: Path, commit: str | None) -> Snapshot:
        return git_snapshot(spec, self.fetch_url(spec, root), root, scratch, commit)

    def newest_commit(self, spec: SourceSpec, root: Path) -> str | None:
        return git.resolve(self.fetch_url(spec, root), spec.ref).commit
