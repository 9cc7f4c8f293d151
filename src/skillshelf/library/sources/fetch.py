"""A source's content as a `Snapshot`: its files listed and checked, nothing written yet.

git is fetched one commit deep into a scratch folder and taken out as a tar (git.py); a `.zip` or
`.skill` file is opened where it is; a folder is listed without following a link; a SKILL.md is one
file. Every kind yields the same members (archive.py's checks applied), relative to the folder asked
for (`--path`), and the source's license file when it has one at its top.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from skillshelf.library.skill.digest import PREFIX
from skillshelf.library.skill.discovery import IGNORED_NAMES
from skillshelf.library.sources import git
from skillshelf.library.sources.archive import (
    MAX_SOURCE_BYTES,
    MAX_SOURCE_ENTRIES,
    Member,
    TarSource,
    ZipSource,
    check_link,
    check_totals,
)
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.lock import LockedSource
from skillshelf.library.sources.spec import (
    SourceSpec,
    default_name,
    is_local_git,
    resolve_local,
    strip_credentials,
)

LICENSE_STEMS = ("license", "licence", "copying", "unlicense")


class _Reader(Protocol):
    def read(self, member: Member) -> bytes: ...


@dataclass
class Snapshot:
    """What a source holds at one version."""

    kind: str
    label: str  # how messages name the source (its URL or path, without credentials)
    reader: _Reader
    members: list[Member]  # relative to the subpath
    commit: str | None = None  # git
    digest: str | None = None  # archives, folders, files: their content
    license_file: Member | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def version(self) -> str:
        return self.commit or self.digest or "?"

    def read(self, member: Member) -> bytes:
        return self.reader.read(member)


def is_license_name(name: str) -> bool:
    stem = name.rsplit(".", 1)[0] if name.lower().endswith((".md", ".txt")) else name
    return stem.casefold() in LICENSE_STEMS


def fetch_url(spec: SourceSpec, root: Path) -> str:
    """What git or the file system is given: a local repository as a file:// URL, so it is fetched
    shallow like any other."""
    if spec.kind == "git" and is_local_git(spec.url):
        return resolve_local(spec.url, root).as_uri()
    return spec.url


def spec_of(source: LockedSource, root: Path) -> SourceSpec:
    """The source a lock entry names, as fetched on this machine. Its name for a skill at its top is the
    one that skill was installed under."""
    url = source.url if source.kind == "git" and not is_local_git(source.url) else str(resolve_local(source.url, root))
    top = next((s for s in source.skills if s.origin == ""), None)
    name = top.id.split("/", 1)[1] if top else default_name(source.kind, url)
    return SourceSpec(source.kind, url, source.ref, source.subpath, name)  # type: ignore[arg-type]


@contextmanager
def open_snapshot(spec: SourceSpec, root: Path, scratch: Path, *, commit: str | None = None) -> Iterator[Snapshot]:
    """The source's content (git: at `commit` when given, else at the ref's newest commit)."""
    if spec.kind == "git":
        snapshot = _git_snapshot(spec, root, scratch, commit)
    elif spec.kind == "archive":
        snapshot = _zip_snapshot(spec)
    elif spec.kind == "folder":
        snapshot = _folder_snapshot(Path(spec.url), spec.subpath, spec.url)
    else:
        snapshot = _file_snapshot(Path(spec.url))
    try:
        yield snapshot
    finally:
        close = getattr(snapshot.reader, "close", None)
        if close is not None:
            close()


def _under(members: list[Member], subpath: str, label: str) -> list[Member]:
    if not subpath:
        return members
    prefix = subpath + "/"
    inside = [_moved(m, m.path[len(prefix) :]) for m in members if m.path.startswith(prefix)]
    if not inside:
        raise SourceError(f"{label} has no folder {subpath!r} (from --path); check the path")
    return inside


def _moved(member: Member, path: str) -> Member:
    return Member(path, member.kind, member.size, member.target, member.handle)


def _license(members: list[Member], subpath: str) -> Member | None:
    """A license file at the top of the subpath, else at the top of the source."""
    for folder in [subpath, ""] if subpath else [""]:
        prefix = folder + "/" if folder else ""
        found = sorted(
            (m for m in members if m.kind != "link" and m.path.startswith(prefix) and "/" not in m.path[len(prefix) :]),
            key=lambda m: m.path,
        )
        match = next((m for m in found if is_license_name(m.path.rsplit("/", 1)[-1])), None)
        if match is not None:
            return match
    return None


def _git_snapshot(spec: SourceSpec, root: Path, scratch: Path, commit: str | None) -> Snapshot:
    url = fetch_url(spec, root)
    label = strip_credentials(spec.url)
    resolved = git.resolve(url, commit or spec.ref)
    repository = scratch / "repository.git"
    git.fetch_commit(url, resolved.commit, repository)
    listed = git.list_tree(repository, resolved.commit, spec.subpath, url)
    if not listed:
        where = f"no folder {spec.subpath!r}" if spec.subpath else "no files"
        raise SourceError(f"{label} has {where} at commit {resolved.commit[:12]}; check --path")
    files = [f for f in listed if f.mode != "160000"]  # submodules: never fetched, never installed
    check_totals([Member(f.path, "file", f.size) for f in files], label)
    licenses = [n for n in git.top_level_names(repository, resolved.commit, url) if is_license_name(n)]
    paths = [spec.subpath, *licenses] if spec.subpath else []
    tar = TarSource(git.archive(repository, resolved.commit, paths, scratch, url), label)
    skipped = len(listed) - len(files)
    notes = [f"{skipped} submodule(s) left out: skillshelf never fetches submodules"] if skipped else []
    try:
        members = _under(tar.members, spec.subpath, label)
    except BaseException:
        tar.close()
        raise
    return Snapshot(
        "git",
        label,
        tar,
        members,
        commit=resolved.commit,
        license_file=_license(tar.members, spec.subpath),
        notes=notes,
    )


def _zip_snapshot(spec: SourceSpec) -> Snapshot:
    path = Path(spec.url)
    archive = ZipSource(path, path.name)
    try:
        return Snapshot(
            "archive",
            path.name,
            archive,
            _under(archive.members, spec.subpath, path.name),
            digest=PREFIX + _file_sha256(path),
            license_file=_license(archive.members, spec.subpath),
        )
    except BaseException:
        archive.close()
        raise


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(1 << 20):
                digest.update(chunk)
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror}") from exc
    return digest.hexdigest()


class FolderReader:
    """Files of a local folder, read without following a link and checked to be what was listed."""

    def __init__(self, top: Path, label: str) -> None:
        self.top = top
        self.label = label

    def read(self, member: Member) -> bytes:
        path = self.top.joinpath(*member.path.split("/"))
        try:
            descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
        except OSError as exc:
            raise SourceError(f"cannot read {member.path} in {self.label}: {exc.strerror}") from exc
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size != member.size:
                raise SourceError(f"{member.path} in {self.label} changed while it was read; run the command again")
            data = handle.read(member.size + 1)
        if len(data) != member.size:
            raise SourceError(f"{member.path} in {self.label} changed while it was read; run the command again")
        return data


def list_folder(top: Path, label: str) -> list[Member]:
    """Every file under `top` (`.git` and build folders left out), links as links, never followed."""
    members: list[Member] = []
    pending = [(top, "")]
    while pending:
        directory, prefix = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError as exc:
            raise SourceError(f"cannot list {directory} in {label}: {exc.strerror}") from exc
        for entry in entries:
            if entry.name == ".git" or entry.name in IGNORED_NAMES:
                continue
            member = _folder_member(entry, prefix, label, pending)
            if member is not None:
                members.append(member)
            if len(members) > MAX_SOURCE_ENTRIES:
                check_totals(members, label)  # refuses: no need to list the rest
    return members


def _folder_member(entry: os.DirEntry[str], prefix: str, label: str, pending: list[tuple[Path, str]]) -> Member | None:
    path = prefix + entry.name
    try:
        entry.name.encode("utf-8")
        info = entry.stat(follow_symlinks=False)
    except UnicodeEncodeError as exc:
        raise SourceError(f"{label} holds a file name that is not UTF-8 ({path!r}); rename it") from exc
    except OSError as exc:
        raise SourceError(f"cannot read {path} in {label}: {exc.strerror}") from exc
    if stat.S_ISDIR(info.st_mode):
        pending.append((Path(entry.path), path + "/"))
        return None
    if stat.S_ISLNK(info.st_mode):
        target = str(Path(entry.path).readlink())
        check_link(path, target, label)
        return Member(path, "link", len(target), target)
    if not stat.S_ISREG(info.st_mode):
        raise SourceError(f"{path} in {label} is a device, FIFO or socket, not a file; remove it or use --only")
    return Member(path, "exec" if info.st_mode & stat.S_IXUSR else "file", info.st_size)


def _folder_snapshot(folder: Path, subpath: str, label: str) -> Snapshot:
    top = folder.joinpath(*subpath.split("/")) if subpath else folder
    if not top.is_dir():
        raise SourceError(f"{label} has no folder {subpath!r} (from --path); check the path")
    members = list_folder(top, label)
    check_totals(members, label)
    reader = FolderReader(top, label)
    outer = list_top(folder, label) if subpath else []
    license_file = _license(members, "") or _license(outer, "")
    return Snapshot(
        "folder",
        label,
        _CombinedReader(reader, FolderReader(folder, label)) if outer else reader,
        members,
        digest=content_digest(members, reader),
        license_file=license_file,
    )


def list_top(folder: Path, label: str) -> list[Member]:
    """The license candidates at the top of a folder (for a --path below it)."""
    return [
        Member(entry.name, "file", entry.stat(follow_symlinks=False).st_size, "", "outer")
        for entry in sorted(os.scandir(folder), key=lambda e: e.name)
        if entry.is_file(follow_symlinks=False) and is_license_name(entry.name)
    ]


class _CombinedReader:
    """The subpath's files, and the license at the folder's top (a member marked 'outer')."""

    def __init__(self, inner: FolderReader, outer: FolderReader) -> None:
        self.inner = inner
        self.outer = outer

    def read(self, member: Member) -> bytes:
        return (self.outer if member.handle == "outer" else self.inner).read(member)


def content_digest(members: list[Member], reader: _Reader) -> str:
    """A digest of everything a folder source holds: its version, for `update` to compare."""
    digest = hashlib.sha256()
    for member in sorted(members, key=lambda m: m.path):
        data = member.target.encode("utf-8") if member.kind == "link" else reader.read(member)
        digest.update(f"{member.kind}\0{member.path}\0{len(data)}\0".encode() + data)
    return PREFIX + digest.hexdigest()


def _file_snapshot(path: Path) -> Snapshot:
    try:
        info = path.lstat()
    except OSError as exc:
        raise SourceError(f"cannot read {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(info.st_mode):
        raise SourceError(f"{path} is not a regular file")
    if info.st_size > MAX_SOURCE_BYTES:
        raise SourceError(f"{path} is {info.st_size} bytes; a SKILL.md is far smaller")
    member = Member("SKILL.md", "file", info.st_size)
    reader = FolderReader(path.parent, str(path))
    renamed = _RenamedReader(reader, path.name)
    return Snapshot("file", str(path), renamed, [member], digest=content_digest([member], renamed))


class _RenamedReader:
    """A single document read as the SKILL.md of the one skill it is."""

    def __init__(self, reader: FolderReader, name: str) -> None:
        self.reader = reader
        self.name = name

    def read(self, member: Member) -> bytes:
        return self.reader.read(Member(self.name, member.kind, member.size))
