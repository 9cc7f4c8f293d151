"""The local kinds: a `.zip`/`.skill` archive, a folder that is not a repository, one SKILL.md. Each is
pinned by the digest of its content; its lock `url` is a portable path (spec.portable_path)."""

from __future__ import annotations

from pathlib import Path, PurePosixPath

from skillshelf.library.sources.fetch import Snapshot, file_snapshot, folder_snapshot, zip_snapshot
from skillshelf.library.sources.kinds.base import SourceKind
from skillshelf.library.sources.spec import SourceSpec


def _local(url: str) -> PurePosixPath:
    return PurePosixPath(url.replace("\\", "/"))


class Archive(SourceKind):
    name = "archive"

    def default_name(self, url: str) -> str:
        return _local(url).name.rsplit(".", 1)[0]

    def snapshot(self, spec: SourceSpec, root: Path, scratch: Path, commit: str | None) -> Snapshot:
        return zip_snapshot(spec)


class Folder(SourceKind):
    name = "folder"

    def default_name(self, url: str) -> str:
        return _local(url).name

    def snapshot(self, spec: SourceSpec, root: Path, scratch: Path, commit: str | None) -> Snapshot:
        return folder_snapshot(Path(spec.url), spec.subpath, spec.url)


class File(SourceKind):
    """One SKILL.md, installed as the one skill it is (named after its folder)."""

    name = "file"
    subfolders = False

    def default_name(self, url: str) -> str:
        local = _local(url)
        return local.parent.name or local.stem

    def snapshot(self, spec: SourceSpec, root: Path, scratch: Path, commit: str | None) -> Snapshot:
        return file_snapshot(Path(spec.url))
