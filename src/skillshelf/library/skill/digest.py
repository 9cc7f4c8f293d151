"""A digest of a skill's files, as they are on disk: what the lock pins and local edits are told by, and
what a replica's library digest (/health) is made of.

SHA-256 over the skill's files sorted by their path relative to the skill's folder (a three-file skill:
its own file names), each as its kind, its path, its length and its bytes; a symbolic link as its link
text, never followed. Only what the library can serve counts: dot-names and build folders
(`node_modules`, `__pycache__`, ...) are left out, as discovery leaves them out. The executable bit is
part of the kind: a script made executable is a change an update's review must show.

`copy_entries` copies a skill's files for a run, hashing each as it is copied: the digest it returns is
the copy's own, so a file swapped while the copy was made shows as a difference, never as approved.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from skillshelf.library.skill.folder import listed

PREFIX = "sha256:"
EntryKind = Literal["file", "exec", "link", "other"]
_KIND_MARK = {"file": b"f", "exec": b"x", "link": b"l", "other": b"?"}


@dataclass(frozen=True)
class TreeEntry:
    path: str  # relative to the skill's folder (or the folder walked), '/'-separated
    kind: EntryKind
    on_disk: Path
    info: os.stat_result = field(compare=False)  # its lstat when listed (the library digest's stamp)

    def content(self) -> bytes:
        """The bytes the digest covers: a file's bytes, a link's text, nothing for anything else."""
        if self.kind == "link":
            return os.fsencode(str(self.on_disk.readlink()))
        if self.kind == "other":
            return b""
        with self.on_disk.open("rb") as handle:
            return handle.read()


def entry_kind(info: os.stat_result) -> EntryKind:
    if stat.S_ISLNK(info.st_mode):
        return "link"
    if stat.S_ISREG(info.st_mode):
        return "exec" if info.st_mode & stat.S_IXUSR else "file"
    return "other"


def walk_tree(folder: Path, folders: list[tuple[Path, os.stat_result]] | None = None) -> Iterator[TreeEntry]:
    """Every entry under `folder` the one walk's ignore list keeps (`folder.listed`), sorted by path; links are
    entries, never entered (the digest pins a link's text, and a review shows it as a link). `folders` gets each
    folder listed with its lstat, taken before it was listed (an entry added or removed later changes it)."""
    pending = [(folder, "")]
    found: list[TreeEntry] = []
    if folders is not None:
        try:
            folders.append((folder, folder.lstat()))
        except OSError:
            return
    while pending:
        directory, prefix = pending.pop()
        try:
            entries = listed(directory)
        except OSError:
            continue
        for entry in entries:
            info = entry.stat(follow_symlinks=False)
            if stat.S_ISDIR(info.st_mode):
                pending.append((Path(entry.path), f"{prefix}{entry.name}/"))
                if folders is not None:
                    folders.append((Path(entry.path), info))
            else:
                found.append(TreeEntry(prefix + entry.name, entry_kind(info), Path(entry.path), info))
    yield from sorted(found, key=lambda e: e.path)


def digest_entries(entries: list[TreeEntry]) -> str:
    digest = hashlib.sha256()
    for entry in sorted(entries, key=lambda e: e.path):
        _add(digest.update, entry.kind, entry.path, entry.content())
    return PREFIX + digest.hexdigest()


def _add(update: Callable[[bytes], None], kind: EntryKind, path: str, data: bytes) -> None:
    """One entry into a digest (its `update`): kind, path, length and bytes, the same for a digest and a copy."""
    update(_KIND_MARK[kind] + b"\0" + path.encode("utf-8") + b"\0")
    update(str(len(data)).encode("ascii") + b"\0" + data)


class CopyRefused(ValueError):
    """The skill's files cannot be copied for a run: over the caps, or a link the copy cannot keep."""


def copy_entries(entries: list[TreeEntry], into: Path, max_files: int, max_bytes: int) -> str:
    """Copy `entries` (a skill's, as `skill_entries` lists them) under `into`, and the digest of what was copied:
    each file read once (never through a link swapped in: O_NOFOLLOW), its bytes hashed as they are written, its
    executable bit as the open file has it; a link as its text. More than `max_files` files or `max_bytes` in all
    is refused (CopyRefused) before more is read, and so is an absolute link (it would lead out of the copy)."""
    if len(entries) > max_files:
        raise CopyRefused(f"it has more than {max_files} files")
    digest = hashlib.sha256()
    budget = max_bytes
    for entry in sorted(entries, key=lambda e: e.path):
        target = into.joinpath(*entry.path.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        kind, data = _copy_one(entry, target, budget)
        if len(data) > budget:
            raise CopyRefused(f"its files hold more than {max_bytes // (1024 * 1024)} MiB")
        budget -= len(data)
        _add(digest.update, kind, entry.path, data)
    return PREFIX + digest.hexdigest()


def _copy_one(entry: TreeEntry, target: Path, budget: int) -> tuple[EntryKind, bytes]:
    """Copy one entry to `target`; its kind and the bytes the digest covers, as copied."""
    if entry.kind == "link":
        text = entry.on_disk.readlink()
        if text.is_absolute():
            raise CopyRefused(f"{entry.path} is a link to an absolute path, which the copy cannot keep")
        target.symlink_to(text)
        return "link", os.fsencode(str(text))
    if entry.kind == "other":  # a fifo or a socket: no bytes, and nothing a run could load
        return "other", b""
    kind, data = _read_once(entry.on_disk, budget)
    if kind != "other" and len(data) <= budget:
        _write_new(target, data, 0o755 if kind == "exec" else 0o644)
    return kind, data


def _read_once(source: Path, limit: int) -> tuple[EntryKind, bytes]:
    """A regular file's kind and up to `limit` + 1 bytes, from one descriptor (no link followed; O_NONBLOCK: a
    fifo swapped in does not wait for a writer). Gone, or no longer a regular file: "other", which no approval of
    it as a file matches."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(source, flags)
    except OSError:
        return "other", b""
    with os.fdopen(fd, "rb") as handle:
        kind = entry_kind(os.fstat(handle.fileno()))
        return (kind, handle.read(limit + 1)) if kind in ("file", "exec") else ("other", b"")


def _write_new(target: Path, data: bytes, mode: int) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
    with os.fdopen(os.open(target, flags, mode), "wb") as out:
        out.write(data)


def skill_entries(
    root: Path, skill_path: str, folders: list[tuple[Path, os.stat_result]] | None = None
) -> list[TreeEntry]:
    """The files of the skill at `skill_path` (relative to root): a folder's tree, or a three-file group. `folders`
    gets each folder listed with its lstat, taken first (a three-file skill's: its category's)."""
    where = root.joinpath(*skill_path.split("/"))
    if skill_path.endswith(".md") and not where.is_dir():
        if folders is not None:
            try:
                folders.append((where.parent, where.parent.lstat()))
            except OSError:
                return []
        return three_file_entries(where)
    return list(walk_tree(where, folders))


def three_file_entries(doc: Path) -> list[TreeEntry]:
    """`<name>.md` with its `<name>.py|.js|.ts` and `<name>-SKILL.md`, those that are there."""
    found = []
    for name in three_file_names(doc.name):
        path = doc.parent / name
        try:
            info = path.lstat()
        except OSError:
            continue
        found.append(TreeEntry(name, entry_kind(info), path, info))
    return found


def three_file_names(doc_name: str) -> list[str]:
    """The files a three-file skill `<name>.md` may have: itself, its code, its `-SKILL.md` metadata."""
    stem = doc_name[: -len(".md")]
    return [doc_name, f"{stem}.py", f"{stem}.js", f"{stem}.ts", f"{stem}-SKILL.md"]


def skill_digest(root: Path, skill_path: str) -> str | None:
    """The digest of the skill at `skill_path`, or None when it is not there (a three-file skill without
    its .md is gone for the library, whatever else is left of it)."""
    where = root.joinpath(*skill_path.split("/"))
    if skill_path.endswith(".md") and not os.path.lexists(where):
        return None
    entries = skill_entries(root, skill_path)
    return digest_entries(entries) if entries else None


def file_digest(path: Path) -> str | None:
    try:
        info = path.lstat()
    except OSError:
        return None
    return digest_entries([TreeEntry(path.name, entry_kind(info), path, info)])
