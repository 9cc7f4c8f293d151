"""Archives from a source, listed and checked before one byte is written.

A `.zip` or `.skill` file is untrusted input (so is the tar `git archive` writes, checked the same way):
every entry's name must stay inside the target (no `..`, no absolute or drive names, no backslashes),
a symbolic link must point inside the archive (its target resolved through the archive's other links,
as the file system will), hard links, devices, FIFOs and encrypted entries are
refused, and the declared sizes are held to a total limit and a compression ratio (a zip bomb
declares a small packed size and a huge one unpacked). A member is then read for no more than the size
it declares: a byte more or less is a lie, and the archive is refused. Limits per skill (the Skills
extension's 512 files, 16 MiB) are applied once the skills are known (layout.py).
"""

from __future__ import annotations

import posixpath
import stat
import tarfile
import zipfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal

from skillshelf.library.sources.errors import SourceError

MAX_SOURCE_BYTES = 256 * 1024 * 1024  # everything an archive declares, or a repository folder holds
MAX_SOURCE_ENTRIES = 20_000
MAX_RATIO = 100  # a member larger than RATIO_FLOOR_BYTES may not expand more than this
RATIO_FLOOR_BYTES = 1024 * 1024
MAX_LINK_BYTES = 4096
MAX_LINK_HOPS = 40  # links followed to resolve one, as Linux allows

MemberKind = Literal["file", "exec", "link"]


@dataclass(frozen=True)
class Member:
    """One file of a source: where it is (relative to the archive's top), what it is, its size."""

    path: str
    kind: MemberKind
    size: int
    target: str = ""  # a link's text
    handle: Any = field(default=None, compare=False, repr=False)  # ZipInfo, TarInfo or Path


def safe_name(name: str, label: str) -> str:
    """`name` as a relative '/'-path that cannot lead out of the target on any system; else refused."""
    if "\\" in name or "\0" in name or name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise SourceError(f"{label} holds an entry with an unsafe name {name!r} (outside the target); refusing it")
    parts = [part for part in PurePosixPath(name).parts if part != "."]
    if not parts or any(part == ".." for part in parts):
        raise SourceError(f"{label} holds an entry with an unsafe name {name!r} (outside the target); refusing it")
    return "/".join(parts)


def check_link(path: str, target: str, label: str) -> None:
    """A link must point inside the archive: never absolute, never above its top."""
    drive = len(target) > 1 and target[1] == ":"
    if not target or target.startswith("/") or "\\" in target or "\0" in target or drive:
        raise SourceError(f"{label}: the link {path} points to {target!r}, outside the source; refusing it")
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
    if joined == ".." or joined.startswith("../"):
        raise SourceError(f"{label}: the link {path} points to {target!r}, outside the source; refusing it")


def check_links(members: list[Member], label: str) -> None:
    """Each link must still point inside the source once the other links are followed, as the file
    system will follow them where the source is written (`u -> .` makes `u/u/../../x` lead out)."""
    links = link_table(members)
    for member in members:
        if member.kind == "link" and resolve_link(member.path, links) is None:
            raise SourceError(
                f"{label}: the link {member.path} points to {member.target!r}, which leads outside the source "
                "(or round a loop) through its other links; refusing it"
            )


def link_table(members: list[Member]) -> dict[str, str]:
    """Each link's path (case folded: a disk may not tell the cases apart) and its text."""
    return {m.path.casefold(): m.target for m in members if m.kind == "link"}


def resolve_link(path: str, links: dict[str, str], top: str = "") -> str | None:
    """Where the link at `path` leads, each component resolved in turn as the file system does (a link
    on the way is followed, then `..` is taken from where it led); None when a step leaves `top` (a
    folder holding the link, '' for the whole source), a target is absolute, or the links loop."""
    floor = len(top.split("/")) if top else 0
    hops = 0

    def follow(folder: list[str], target: str) -> list[str] | None:
        nonlocal hops
        where = list(folder)
        for part in target.split("/"):
            if part == "..":
                if len(where) <= floor:
                    return None
                where.pop()
            elif part not in ("", "."):
                where.append(part)
                text = links.get("/".join(where).casefold())
                if text is None:
                    continue
                hops += 1
                if hops > MAX_LINK_HOPS or text.startswith("/"):
                    return None
                resolved = follow(where[:-1], text)
                if resolved is None:
                    return None
                where = resolved
        return where

    target = links.get(path.casefold())
    if target is None or target.startswith("/"):
        return None
    resolved = follow(path.split("/")[:-1], target)
    return None if resolved is None else "/".join(resolved)


def check_totals(members: list[Member], label: str) -> None:
    total = sum(m.size for m in members)
    if len(members) > MAX_SOURCE_ENTRIES or total > MAX_SOURCE_BYTES:
        raise SourceError(
            f"{label} holds {len(members)} files of {total} bytes, more than skillshelf takes from one source "
            f"({MAX_SOURCE_ENTRIES} files, {MAX_SOURCE_BYTES} bytes); point --path at the folder with the skills"
        )


def check_names(members: list[Member], label: str) -> None:
    """No name twice (in any case: which one a case-insensitive disk keeps is up to chance), and no name
    both a file and a folder (a link there would let a later entry be written through it)."""
    seen: dict[str, str] = {}
    for member in members:
        folded = member.path.casefold()
        if folded in seen:
            raise SourceError(f"{label} holds {member.path} twice (or in two cases); refusing it")
        seen[folded] = member.path
    names = set(seen)
    for member in members:
        parents = PurePosixPath(member.path.casefold()).parents
        clash = next((str(p) for p in parents if str(p) in names), None)
        if clash is not None:
            raise SourceError(f"{label} holds {clash} both as a file and as the folder of {member.path}")


class ZipSource:
    """A `.zip` or `.skill` archive, its members checked on opening."""

    def __init__(self, path: Path, label: str) -> None:
        self.label = label
        try:
            self.archive = zipfile.ZipFile(path)
        except (OSError, EOFError, ValueError, NotImplementedError, zipfile.BadZipFile) as exc:
            raise SourceError(f"{label} is not a readable zip archive: {exc}") from exc
        try:
            self.members = self._members()
        except BaseException:
            self.archive.close()
            raise

    def close(self) -> None:
        self.archive.close()

    def _members(self) -> list[Member]:
        infos = self.archive.infolist()
        if len(infos) > MAX_SOURCE_ENTRIES:
            check_totals([Member(str(i), "file", 0) for i in range(len(infos))], self.label)
        members = [m for m in (self._member(info) for info in infos) if m is not None]
        packed = sum(info.compress_size for info in infos)
        unpacked = sum(m.size for m in members)
        if unpacked > RATIO_FLOOR_BYTES and unpacked > MAX_RATIO * max(packed, 1):
            raise SourceError(
                f"{self.label} would expand {packed} bytes into {unpacked}, more than {MAX_RATIO} times: "
                "a zip bomb, not a skill; refusing it"
            )
        check_totals(members, self.label)
        check_names(members, self.label)
        check_links(members, self.label)
        return members

    def _member(self, info: zipfile.ZipInfo) -> Member | None:
        path = safe_name(info.filename, self.label)
        mode = info.external_attr >> 16
        kind = stat.S_IFMT(mode)
        if info.is_dir() or kind == stat.S_IFDIR or (info.external_attr & 0x10 and not kind):
            return None
        if info.flag_bits & 0x1:
            raise SourceError(f"{path} in {self.label} is encrypted; a skill archive is not. Refusing it")
        if kind not in (0, stat.S_IFREG, stat.S_IFLNK):
            raise SourceError(f"{path} in {self.label} is a device, FIFO or socket, not a file; refusing it")
        if info.file_size > RATIO_FLOOR_BYTES and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise SourceError(
                f"{path} in {self.label} would expand {info.compress_size} bytes into {info.file_size}, more "
                f"than {MAX_RATIO} times: a zip bomb, not a skill; refusing it"
            )
        if kind == stat.S_IFLNK:
            if info.file_size > MAX_LINK_BYTES:
                raise SourceError(f"the link {path} in {self.label} is {info.file_size} bytes long; refusing it")
            target = self._bounded(info).decode("utf-8", "replace")
            check_link(path, target, self.label)
            return Member(path, "link", len(target), target, info)
        return Member(path, "exec" if mode & stat.S_IXUSR else "file", info.file_size, "", info)

    def read(self, member: Member) -> bytes:
        return self._bounded(member.handle)

    def _bounded(self, info: zipfile.ZipInfo) -> bytes:
        """The member's bytes, never more than it declares (zipfile stops there too, then finds the CRC
        wrong; the count does not depend on that)."""
        with _reading(info.filename, self.label), self.archive.open(info) as source:
            data = source.read(info.file_size + 1)
        if len(data) != info.file_size:
            raise SourceError(
                f"{info.filename} in {self.label} declares {info.file_size} bytes but holds "
                f"{'more' if len(data) > info.file_size else len(data)}; refusing the archive"
            )
        return data


class TarSource:
    """The tar `git archive` writes, checked like a zip (git would not write a hostile one; checked all
    the same, as the repository's names come from whoever wrote it)."""

    def __init__(self, path: Path, label: str) -> None:
        self.label = label
        try:
            self.archive = tarfile.open(path, mode="r:")  # noqa: SIM115 (closed by close())
        except (OSError, tarfile.TarError) as exc:
            raise SourceError(f"{label}: git wrote an archive that cannot be read: {exc}") from exc
        try:
            self.members = [m for m in (self._member(info) for info in self.archive) if m is not None]
            check_totals(self.members, label)  # a git tree holds no name twice; names differing in case are git's own
            check_links(self.members, label)
        except BaseException:
            self.archive.close()
            raise

    def close(self) -> None:
        self.archive.close()

    def _member(self, info: tarfile.TarInfo) -> Member | None:
        path = safe_name(info.name, self.label)
        if info.isdir():
            return None
        if info.issym():
            check_link(path, info.linkname, self.label)
            return Member(path, "link", len(info.linkname), info.linkname, info)
        if not info.isreg():
            what = "a hard link" if info.islnk() else "a device or FIFO"
            raise SourceError(f"{path} in {self.label} is {what}, not a file; refusing it")
        return Member(path, "exec" if info.mode & stat.S_IXUSR else "file", info.size, "", info)

    def read(self, member: Member) -> bytes:
        with _reading(member.path, self.label):
            source = self.archive.extractfile(member.handle)
            if source is None:
                raise SourceError(f"{member.path} in {self.label} has no content")
            with source:
                data = source.read(member.size + 1)
        if len(data) != member.size:
            raise SourceError(f"{member.path} in {self.label} is not the size it declares; refusing it")
        return data


@contextmanager
def _reading(name: str, label: str) -> Iterator[None]:
    try:
        yield
    except (zipfile.BadZipFile, tarfile.TarError, zlib.error, EOFError, NotImplementedError, OSError) as exc:
        raise SourceError(f"{name} in {label} is damaged or not what its header says ({exc}); refusing it") from exc
