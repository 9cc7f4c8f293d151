"""A source's content as a `Snapshot`: its files listed and checked, nothing written yet.

git is fetched one commit deep into a scratch folder and taken out as a tar (git.py); a `.zip` or
`.skill` file is opened where it is; a folder is listed and read through folder handles, never through
a link below its top, each file checked to be the one listed; a SKILL.md is one file; a discovery index
or another MCP server is fetched whole by its client (remote.py), every file checked against its digest,
and held in memory. Which of these a source gets is its kind's class (kinds/). Every kind yields the
same members (archive.py's checks applied), relative to the folder asked for (`--path`), and the
source's license file when it has one at its top.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from skillshelf.library.skill.digest import PREFIX
from skillshelf.library.skill.discovery import IGNORED_NAMES
from skillshelf.library.sources import git, signers
from skillshelf.library.sources.archive import (
    MAX_SOURCE_BYTES,
    MAX_SOURCE_ENTRIES,
    Member,
    MemberKind,
    TarSource,
    ZipSource,
    check_link,
    check_links,
    check_totals,
)
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.remote import fetch_remote
from skillshelf.library.sources.spec import SourceSpec, clean_subpath, strip_credentials

LICENSE_STEMS = ("license", "licence", "copying", "unlicense")


class _Reader(Protocol):
    def read(self, member: Member) -> bytes: ...


@dataclass
class Snapshot:
    """What a source holds at one version."""

    label: str  # how messages name the source (its URL or path, without credentials)
    reader: _Reader
    members: list[Member]  # relative to the subpath
    commit: str | None = None  # git
    digest: str | None = None  # archives, folders, files: their content
    license_file: Member | None = None
    signer: str | None = None  # git, when a signature was required: who signed the commit
    notes: list[str] = field(default_factory=list)

    @property
    def version(self) -> str:
        return self.commit or self.digest or "?"

    def read(self, member: Member) -> bytes:
        return self.reader.read(member)


def is_license_name(name: str) -> bool:
    stem = name.rsplit(".", 1)[0] if name.lower().endswith((".md", ".txt")) else name
    return stem.casefold() in LICENSE_STEMS


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


def git_snapshot(spec: SourceSpec, url: str, root: Path, scratch: Path, commit: str | None) -> Snapshot:
    """A git source at `commit` (else its ref's newest), fetched from `url` (kinds/git.py's fetch_url)."""
    label = strip_credentials(spec.url)
    resolved = git.resolve(url, commit or spec.ref)
    repository = scratch / "repository.git"
    git.fetch_commit(url, resolved.commit, repository)
    signer = _signer(spec, root, repository, resolved.commit, url)
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
        label,
        tar,
        members,
        commit=resolved.commit,
        license_file=_license(tar.members, spec.subpath),
        signer=signer,
        notes=notes,
    )


def _signer(spec: SourceSpec, root: Path, repository: Path, commit: str, url: str) -> str | None:
    """Who signed `commit`, when the source requires signed commits (else None); checked before a byte
    of it is taken out of the repository."""
    if not spec.signed:
        return None
    allowed = signers.allowed_signers(root, Path(spec.signers) if spec.signers else None)
    return git.verify_commit(repository, commit, allowed, url)


def zip_snapshot(spec: SourceSpec) -> Snapshot:
    path = Path(spec.url)
    archive = ZipSource(path, path.name)
    try:
        return Snapshot(
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


# -- folders and files -----------------------------------------------------------------------------
# Below the folder the user named, nothing is reached through a link: each folder is opened relative to
# its parent's handle, refusing a link, and each file the same way, then checked to be the one listed.
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_FOLDER_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | _CLOEXEC
_FILE_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | _CLOEXEC  # a FIFO swapped in: no wait
MAX_FOLDER_DEPTH = 64  # folders below a folder source's top; the walk holds one handle per level
_CHANGED = (errno.ELOOP, errno.ENOTDIR, errno.ENOENT, errno.EMLINK)  # ELOOP/EMLINK: a link where none was


@dataclass(frozen=True)
class Listed:
    """A folder member as listed: the file every read of it must be, and where it is read from."""

    device: int
    inode: int
    outer: bool = False  # the license at the top of the folder (with --path below it)


class FolderReader:
    """A local folder: listed and read through folder handles, never through a link below its top."""

    def __init__(self, folder: Path, subpath: str, label: str) -> None:
        if os.open not in os.supports_dir_fd or os.listdir not in os.supports_fd:
            raise SourceError(f"{label}: this system cannot read a folder without following links; add an archive")
        self.label = label
        subpath = clean_subpath(subpath) if subpath else ""  # a lock's too: never `..` nor absolute
        self.outer = _open_top(folder, label)  # the path the user gave: followed, as they typed it
        self.top = _open_below(self.outer, subpath, label)

    def close(self) -> None:
        for descriptor in {self.top, self.outer}:
            os.close(descriptor)

    # -- listing -------------------------------------------------------------------------------------
    def members(self) -> list[Member]:
        """Every file (`.git` and build folders left out), links as links, never followed."""
        members: list[Member] = []
        self._list(self.top, "", 0, members)
        check_links(members, self.label)
        return members

    def _list(self, folder: int, prefix: str, depth: int, members: list[Member]) -> None:
        for name, info in self._entries(folder, prefix):
            path = prefix + name
            if not stat.S_ISDIR(info.st_mode):
                members.append(self._member(folder, name, info, path))
                if len(members) > MAX_SOURCE_ENTRIES:
                    check_totals(members, self.label)  # refuses: no need to list the rest
                continue
            if depth >= MAX_FOLDER_DEPTH:
                raise SourceError(f"{path} in {self.label} is {depth + 1} folders deep; point --path below it")
            child = self._enter(folder, name, info, path)
            try:
                self._list(child, path + "/", depth + 1, members)
            finally:
                os.close(child)

    def _entries(self, folder: int, prefix: str) -> list[tuple[str, os.stat_result]]:
        try:
            names = sorted(n for n in os.listdir(folder) if n != ".git" and n not in IGNORED_NAMES)
            entries = [(n, os.stat(n, dir_fd=folder, follow_symlinks=False)) for n in names]
        except OSError as exc:
            raise SourceError(f"cannot list {prefix or '.'} in {self.label}: {exc.strerror}") from exc
        for name, _ in entries:
            try:
                name.encode("utf-8")
            except UnicodeEncodeError as exc:
                what = f"a file name that is not UTF-8 ({prefix + name!r})"
                raise SourceError(f"{self.label} holds {what}; rename it") from exc
        return entries

    def _enter(self, folder: int, name: str, info: os.stat_result, path: str) -> int:
        try:
            child = os.open(name, _FOLDER_FLAGS, dir_fd=folder)
        except OSError as exc:
            raise self._changed(path, exc) from exc
        if not os.path.samestat(info, os.fstat(child)):
            os.close(child)
            raise self._changed(path)
        return child

    def _member(self, folder: int, name: str, info: os.stat_result, path: str) -> Member:
        if stat.S_ISLNK(info.st_mode):
            try:
                target = os.readlink(name, dir_fd=folder)
            except OSError as exc:
                raise self._changed(path, exc) from exc
            check_link(path, target, self.label)
            return Member(path, "link", len(target), target)
        if not stat.S_ISREG(info.st_mode):
            what = "a device, FIFO or socket, not a file"
            raise SourceError(f"{path} in {self.label} is {what}; remove it or use --only")
        kind: MemberKind = "exec" if info.st_mode & stat.S_IXUSR else "file"
        return Member(path, kind, info.st_size, "", Listed(info.st_dev, info.st_ino))

    def top_licenses(self) -> list[Member]:
        """The license candidates at the top of the folder (for a --path below it)."""
        found = []
        for name, info in self._entries(self.outer, ""):
            if stat.S_ISREG(info.st_mode) and is_license_name(name):
                found.append(Member(name, "file", info.st_size, "", Listed(info.st_dev, info.st_ino, outer=True)))
        return found

    # -- reading -------------------------------------------------------------------------------------
    def read(self, member: Member) -> bytes:
        """The member's bytes, from the very file that was listed (device, inode, size), else refused."""
        listed: Listed = member.handle
        descriptor = self._open_file(self.outer if listed.outer else self.top, member.path)
        with os.fdopen(descriptor, "rb") as handle:
            info = os.fstat(handle.fileno())
            same = (info.st_dev, info.st_ino, info.st_size) == (listed.device, listed.inode, member.size)
            if not stat.S_ISREG(info.st_mode) or not same:
                raise self._changed(member.path)
            data = handle.read(member.size + 1)
        if len(data) != member.size:
            raise self._changed(member.path)
        return data

    def _open_file(self, top: int, path: str) -> int:
        *folders, name = path.split("/")
        opened: list[int] = []
        try:
            for part in folders:
                opened.append(os.open(part, _FOLDER_FLAGS, dir_fd=opened[-1] if opened else top))
            return os.open(name, _FILE_FLAGS, dir_fd=opened[-1] if opened else top)
        except OSError as exc:
            raise self._changed(path, exc) from exc
        finally:
            for descriptor in opened:
                os.close(descriptor)

    def _changed(self, path: str, exc: OSError | None = None) -> SourceError:
        if exc is not None and exc.errno not in _CHANGED:
            return SourceError(f"cannot read {path} in {self.label}: {exc.strerror}")
        return SourceError(
            f"{path} in {self.label} changed while it was read (a link or another file where one was listed); "
            "nothing was installed from it. Run the command again"
        )


def _open_top(folder: Path, label: str) -> int:
    try:
        return os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _CLOEXEC)
    except FileNotFoundError as exc:
        raise SourceError(f"the folder {folder} does not exist; check the path") from exc
    except NotADirectoryError as exc:
        raise SourceError(f"{folder} is not a folder; check the path") from exc
    except OSError as exc:
        raise SourceError(f"cannot open the folder {folder} ({label}): {exc.strerror}") from exc


def _open_below(top: int, subpath: str, label: str) -> int:
    """The --path folder under `top`, each of its folders opened without following a link."""
    folder = top
    try:
        for part in subpath.split("/") if subpath else []:
            child = os.open(part, _FOLDER_FLAGS, dir_fd=folder)
            if folder != top:
                os.close(folder)
            folder = child
    except OSError as exc:
        for descriptor in {folder, top}:
            os.close(descriptor)
        raise SourceError(f"{label} has no folder {subpath!r} (from --path; links are not followed)") from exc
    return folder


def folder_snapshot(folder: Path, subpath: str, label: str) -> Snapshot:
    reader = FolderReader(folder, subpath, label)
    try:
        members = reader.members()
        check_totals(members, label)
        outer = reader.top_licenses() if subpath else []
        return Snapshot(
            label,
            reader,
            members,
            digest=content_digest(members, reader),
            license_file=_license(members, "") or _license(outer, ""),
        )
    except BaseException:
        reader.close()
        raise


def content_digest(members: list[Member], reader: _Reader) -> str:
    """A digest of everything a folder source holds: its version, for `update` to compare."""
    digest = hashlib.sha256()
    for member in sorted(members, key=lambda m: m.path):
        data = member.target.encode("utf-8") if member.kind == "link" else reader.read(member)
        digest.update(f"{member.kind}\0{member.path}\0{len(data)}\0".encode() + data)
    return PREFIX + digest.hexdigest()


class _MemoryReader:
    """A remote source's files, fetched and checked whole before anything is planned."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files

    def read(self, member: Member) -> bytes:
        return self.files[member.path]


def remote_snapshot(spec: SourceSpec) -> Snapshot:
    fetched = fetch_remote(spec)
    label = spec.public_url
    listed = [Member(path, "file", len(data)) for path, data in sorted(fetched.files.items())]
    check_totals(listed, label)
    members = _under(listed, spec.subpath, label)
    prefix = spec.subpath + "/" if spec.subpath else ""
    reader = _MemoryReader({m.path: fetched.files[prefix + m.path] for m in members})
    return Snapshot(
        label,
        reader,
        members,
        digest=content_digest(members, reader),
        license_file=_license(members, ""),
        notes=fetched.notes,
    )


def file_snapshot(path: Path) -> Snapshot:
    """One SKILL.md: its folder opened as the user gave it, the file itself never through a link."""
    reader = FolderReader(path.parent, "", str(path))
    try:
        try:
            info = os.stat(path.name, dir_fd=reader.top, follow_symlinks=False)
        except OSError as exc:
            raise SourceError(f"cannot read {path}: {exc.strerror}") from exc
        if not stat.S_ISREG(info.st_mode):
            raise SourceError(f"{path} is not a regular file")
        if info.st_size > MAX_SOURCE_BYTES:
            raise SourceError(f"{path} is {info.st_size} bytes; a SKILL.md is far smaller")
        member = Member("SKILL.md", "file", info.st_size, "", Listed(info.st_dev, info.st_ino))
        renamed = _RenamedReader(reader, path.name)
        return Snapshot(str(path), renamed, [member], digest=content_digest([member], renamed))
    except BaseException:
        reader.close()
        raise


class _RenamedReader:
    """A single document read as the SKILL.md of the one skill it is."""

    def __init__(self, reader: FolderReader, name: str) -> None:
        self.reader = reader
        self.name = name

    def read(self, member: Member) -> bytes:
        return self.reader.read(Member(self.name, member.kind, member.size, member.target, member.handle))

    def close(self) -> None:
        self.reader.close()
