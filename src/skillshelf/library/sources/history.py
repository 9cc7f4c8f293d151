"""A skill's earlier versions, kept so that an update can be undone: `<root>/.skillshelf/history/`.

Before a swap replaces a skill (`update`, `sync --force`, `rollback`), the bytes installed are kept: each
file once, by the SHA-256 of its bytes (`blobs/ab/cdef…`: the same bytes are stored once, whatever version
or skill holds them), and one manifest per version (`versions/<sha256 of the id>/<rev>.json`): the skill's
id, its digest (digest.py), its files with their kind, when, why, and the source version it came from.
Revisions count up per skill; past `history_keep` the oldest manifests are pruned, then every blob no
manifest names.

What is read back is input (a file under `.skillshelf/` can be edited by anyone who can write the library):
a manifest is checked field by field, a blob is read as a regular file under a cap and its hash proved
before its bytes are used, and a version is restored only when its files give its digest again.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from skillshelf.library.skill.digest import TreeEntry, digest_entries, skill_digest, skill_entries, three_file_names
from skillshelf.library.skill.folder import MAX_TOTAL_BYTES
from skillshelf.library.skill.reading import read_regular_file
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.local import state_dir
from skillshelf.library.sources.lock import LockedSource
from skillshelf.library.sources.spec import STATE_DIR, plain_name

logger = logging.getLogger(__name__)

HISTORY = "history"
BLOBS = "blobs"
VERSIONS = "versions"
DEFAULT_KEEP = 10
MAX_BLOB_BYTES = MAX_TOTAL_BYTES  # one file can be no larger than a whole skill may be
MAX_MANIFEST_BYTES = 1024 * 1024
KINDS = {"file": 0o644, "exec": 0o755, "link": 0}
_HEX = re.compile(r"^[0-9a-f]{64}$")
_MANIFEST = re.compile(r"^(\d{1,9})\.json$")
DIFF_CONTEXT = 3


@dataclass(frozen=True)
class StoredFile:
    path: str  # relative to the skill's folder (a three-file skill: its own file names), '/'-separated
    kind: str  # file, exec (the executable bit) or link (the blob is the link's text)
    blob: str  # the SHA-256 of its bytes, hex

    @property
    def mode(self) -> int:
        return KINDS[self.kind]


@dataclass(frozen=True)
class Version:
    skill_id: str
    rev: int
    digest: str  # digest.py's digest of these files: what the lock pinned, if nobody had edited them
    when: str
    why: str
    source_version: str  # the source's commit (or content digest) that was installed when it was kept
    files: tuple[StoredFile, ...]
    accepted: tuple[str, ...] = ()  # the high scan findings the lock accepted for these bytes ('RULE:PATH')

    def to_dict(self, *, with_files: bool = False) -> dict[str, Any]:
        found: dict[str, Any] = {
            "id": self.skill_id,
            "rev": self.rev,
            "digest": self.digest,
            "when": self.when,
            "why": self.why,
            "source": self.source_version,
            "accepted": list(self.accepted),
        }
        if with_files:
            found["files"] = [
                {"path": f.path, "kind": f.kind, "mode": f"{f.mode:o}", "blob": f.blob} for f in self.files
            ]
        return found


@dataclass(frozen=True)
class VersionLine:
    """What the web skill page lists of a version: only its number, digest, time and reason."""

    rev: int
    digest: str
    when: str
    why: str


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def short(version: str) -> str:
    """'1a2b3c4d' for a commit or a 'sha256:' digest."""
    return version.removeprefix("sha256:")[:8]


# -- where ----------------------------------------------------------------------------------------
def _store(root: Path) -> Path:
    """The history folder (made: a writer's), below the library's own folder `local.state_dir` makes."""
    state = state_dir(root)
    return _made(state / HISTORY, state)


def _made(folder: Path, within: Path) -> Path:
    """`folder`, made, when it is a real folder below `within`: a write never leaves the history through a
    link someone put in it."""
    folder.mkdir(parents=True, exist_ok=True)
    if folder.is_symlink() or not folder.resolve().is_relative_to(within.resolve()):
        raise SourceError(f"{folder} leads outside {within} through a link; remove it (nothing was changed)")
    return folder


def _versions_of(history: Path, skill_id: str) -> Path:
    """A folder per skill, named by a hash of its id: an id from the lock never becomes a path here."""
    return history / VERSIONS / hashlib.sha256(skill_id.encode("utf-8", "surrogateescape")).hexdigest()[:32]


def _blob(history: Path, blob: str) -> Path:
    return history / BLOBS / blob[:2] / blob[2:]


# -- keeping ---------------------------------------------------------------------------------------
def keep_changed(root: Path, old: LockedSource, new_folder: Path | None, why: str, keep: int) -> list[Version]:
    """Keep each skill of `old` whose installed bytes the swap to `new_folder` (the source's staged folder;
    None: the folder goes) would change; then prune to `keep` versions per skill. Called before the swap:
    a failure here changes nothing (SourceError)."""
    kept = []
    for skill in old.skills:
        installed = skill_digest(root, skill.path)
        if installed is None:
            continue
        leaf = skill.path.rsplit("/", 1)[-1]
        if new_folder is not None and skill_digest(new_folder, leaf) == installed:
            continue
        accepted = skill.accepted if installed == skill.digest else ()  # bound to the bytes they were given for
        kept.append(record(root, skill.id, skill.path, why, old.version, accepted))
    if kept:
        prune(root, keep)
    return kept


def record(
    root: Path, skill_id: str, skill_path: str, why: str, source_version: str, accepted: tuple[str, ...] = ()
) -> Version:
    """Keep the skill at `skill_path` as it is installed now; the newest version when it already holds
    exactly these bytes."""
    entries = [e for e in skill_entries(root, skill_path) if e.kind != "other"]  # what no source installs
    digest = digest_entries(entries)
    try:
        history = _store(root)
        stored = versions(root, skill_id)
        if stored and stored[-1].digest == digest:
            return stored[-1]
        files = tuple(StoredFile(e.path, e.kind, _put(history, _bytes_of(e))) for e in entries)
        rev = (stored[-1].rev + 1) if stored else 1
        version = Version(skill_id, rev, digest, now(), why, source_version, files, accepted)
        folder = _made(_versions_of(history, skill_id), history)
        _write(folder / f"{version.rev}.json", json.dumps(version.to_dict(with_files=True), indent=1).encode())
    except OSError as exc:
        raise SourceError(
            f"cannot keep the installed version of {skill_id} in {STATE_DIR}/{HISTORY} ({exc.strerror or exc}); "
            "nothing was changed. Free some space or make the folder writable, and run the command again"
        ) from exc
    return version


def _bytes_of(entry: TreeEntry) -> bytes:
    if entry.kind == "link":
        return os.fsencode(str(entry.on_disk.readlink()))
    data = read_regular_file(entry.on_disk, MAX_BLOB_BYTES + 1)
    if len(data) > MAX_BLOB_BYTES:
        raise SourceError(
            f"{entry.path} is over {MAX_BLOB_BYTES} bytes, more than a whole skill may hold; nothing was changed"
        )
    return data


def _put(history: Path, data: bytes) -> str:
    blob = hashlib.sha256(data).hexdigest()
    path = _blob(history, blob)
    if not path.exists():  # the same bytes are stored once
        _write(_made(path.parent, history) / path.name, data)
    return blob


def _write(path: Path, data: bytes) -> None:
    """Whole or not at all: a temporary file beside it, flushed, renamed over it."""
    handle, temporary = tempfile.mkstemp(prefix=".", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        Path(temporary).replace(path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def prune(root: Path, keep: int) -> None:
    """Keep the newest `keep` versions of each skill; then delete every blob no manifest names."""
    history = root / STATE_DIR / HISTORY
    named: set[str] = set()
    for folder in _listed(history / VERSIONS):
        revs = sorted(rev for rev, _ in _manifests(folder))
        for rev in revs[: max(0, len(revs) - keep)]:
            (folder / f"{rev}.json").unlink(missing_ok=True)
        for rev, path in _manifests(folder):
            with contextlib.suppress(SourceError):
                named.update(f.blob for f in _read_manifest(path, None, rev).files)
    for shard in _listed(history / BLOBS):
        for path in _listed(shard):
            if shard.name + path.name not in named:
                path.unlink(missing_ok=True)


def _listed(folder: Path) -> list[Path]:
    try:
        return sorted(p for p in folder.iterdir() if not p.name.startswith(".") and not p.is_symlink())
    except OSError:
        return []


def _manifests(folder: Path) -> Iterator[tuple[int, Path]]:
    for path in _listed(folder):
        found = _MANIFEST.match(path.name)
        if found:
            yield int(found.group(1)), path


# -- reading -----------------------------------------------------------------------------------------
def versions(root: Path, skill_id: str) -> list[Version]:
    """The kept versions of `skill_id`, oldest first; a manifest that is not one skillshelf wrote is skipped
    (and logged)."""
    found = []
    for rev, path in _manifests(_versions_of(root / STATE_DIR / HISTORY, skill_id)):
        try:
            found.append(_read_manifest(path, skill_id, rev))
        except SourceError as exc:
            logger.warning("skipping %s: %s", path, exc.message)
    return sorted(found, key=lambda v: v.rev)


def version_lines(root: Path, skill_id: str) -> list[VersionLine]:
    """The kept versions, newest first, as the web skill page lists them."""
    return [VersionLine(v.rev, v.digest, v.when, v.why) for v in reversed(versions(root, skill_id))]


def version(root: Path, skill_id: str, rev: int | None) -> Version:
    """Revision `rev` of `skill_id` (None: the newest kept); a SourceError naming what is kept otherwise."""
    stored = versions(root, skill_id)
    if not stored:
        raise SourceError(
            f"no earlier version of {skill_id} is kept here: an update, `sync --force` or a rollback keeps the "
            "version it replaces (`skillshelf history ID` lists them); nothing was changed"
        )
    if rev is None:
        return stored[-1]
    found = next((v for v in stored if v.rev == rev), None)
    if found is None:
        kept = ", ".join(str(v.rev) for v in stored)
        gone = "is gone (pruned past `history_keep`)" if rev < stored[0].rev else "does not exist"
        raise SourceError(f"revision {rev} of {skill_id} {gone}; kept revisions: {kept}. Nothing was changed")
    return found


def _read_manifest(path: Path, skill_id: str | None, rev: int) -> Version:
    try:
        data = read_regular_file(path, MAX_MANIFEST_BYTES + 1)
        if len(data) > MAX_MANIFEST_BYTES:
            raise ValueError(f"over {MAX_MANIFEST_BYTES} bytes")
        raw = json.loads(data)
    except (OSError, ValueError) as exc:
        raise SourceError(f"{path.name} is not a manifest skillshelf wrote ({exc})") from exc
    if not isinstance(raw, dict):
        raise SourceError(f"{path.name} is not a JSON object")
    texts = {key: raw.get(key) for key in ("id", "digest", "when", "why", "source")}
    if not all(isinstance(value, str) for value in texts.values()) or raw.get("rev") != rev:
        raise SourceError(f"{path.name} lacks id, rev, digest, when, why or source")
    if skill_id is not None and texts["id"] != skill_id:
        raise SourceError(f"{path.name} is a version of {texts['id']!r}, not of {skill_id!r}")
    files = raw.get("files")
    if not isinstance(files, list):
        raise SourceError(f"{path.name} has no list of files")
    stored = tuple(_stored_file(item, path.name) for item in files)
    accepted = raw.get("accepted", [])
    if not isinstance(accepted, list) or not all(isinstance(a, str) and ":" in a for a in accepted):
        raise SourceError(f"{path.name}: accepted must be a list of 'RULE:PATH'")
    return Version(
        str(texts["id"]), rev, str(texts["digest"]), str(texts["when"]), str(texts["why"]), str(texts["source"]),
        _a_tree(stored, path.name), tuple(accepted),
    )  # fmt: skip


def _a_tree(files: tuple[StoredFile, ...], where: str) -> tuple[StoredFile, ...]:
    """`files`, when they are what a walk lists: each path once, none below another (a file or a link: a
    restore would otherwise write through a link a manifest put on the way)."""
    paths = [f.path for f in files]
    if len(set(paths)) != len(paths) or any(_inside(path, set(paths)) for path in paths):
        raise SourceError(f"{where}: a file is listed twice, or below another file or a link")
    return files


def _inside(path: str, paths: set[str]) -> bool:
    parts = path.split("/")
    return any("/".join(parts[:end]) in paths for end in range(1, len(parts)))


def _stored_file(raw: Any, where: str) -> StoredFile:
    if not isinstance(raw, dict):
        raise SourceError(f"{where}: a file must be an object")
    path, kind, blob = raw.get("path"), raw.get("kind"), raw.get("blob")
    if not isinstance(path, str) or not path or not all(plain_name(part) for part in path.split("/")):
        raise SourceError(f"{where}: {path!r} is not a path inside a skill")
    if kind not in KINDS or not isinstance(blob, str) or not _HEX.match(blob):
        raise SourceError(f"{where}: {path}: kind must be file, exec or link and blob a SHA-256")
    return StoredFile(path, str(kind), blob)


def blob_bytes(root: Path, blob: str) -> bytes:
    """A stored file's bytes, proved by their hash; a SourceError when the blob is missing or altered."""
    path = _blob(root / STATE_DIR / HISTORY, blob)
    try:
        data = read_regular_file(path, MAX_BLOB_BYTES + 1)
    except OSError as exc:
        raise SourceError(f"a kept file ({blob[:12]}) is missing from the history ({exc.strerror})") from exc
    if hashlib.sha256(data).hexdigest() != blob:
        raise SourceError(f"a kept file ({blob[:12]}) was altered in the history (its bytes are not its hash)")
    return data


# -- restoring ---------------------------------------------------------------------------------------
def restore(root: Path, kept: Version, where: Path, leaf: str) -> None:
    """Write `kept`'s files as the skill `leaf` (its folder's name, or a three-file skill's `NAME.md`) in the
    source folder `where` (a staged copy), then prove they give its digest; a SourceError otherwise."""
    three_file = leaf.endswith(".md") and not (where / leaf).is_dir()
    if three_file and not {f.path for f in kept.files} <= set(three_file_names(leaf)):
        raise SourceError(f"its files are not those of the three-file skill {leaf} (the history was edited by hand)")
    base = where if three_file else where / leaf
    if not three_file:
        base.mkdir()
    for stored in kept.files:
        data = blob_bytes(root, stored.blob)
        target = base.joinpath(*stored.path.split("/"))
        target.parent.mkdir(parents=True, exist_ok=True)
        if stored.kind == "link":
            target.symlink_to(os.fsdecode(data))
        else:
            _write(target, data)
            target.chmod(stored.mode)
    if skill_digest(where, leaf) != kept.digest:
        raise SourceError(
            f"its files do not give its digest {short(kept.digest)} again (the history was edited by hand)"
        )


def restore_rolled_back(root: Path, entry: LockedSource, staged: Path) -> None:
    """In the source's folder `staged` at its locked version, put each rolled-back skill's locked bytes (the
    lock pins the earlier version `skillshelf rollback` restored), taken from this machine's history."""
    for skill in entry.skills:
        leaf = skill.path.rsplit("/", 1)[-1]
        if skill.rollback is None or skill_digest(staged, leaf) == skill.digest:
            continue
        kept = next((v for v in reversed(versions(root, skill.id)) if v.digest == skill.digest), None)
        if kept is None:
            raise SourceError(
                f"{skill.id} is rolled back in the lock ({skill.rollback}) to bytes this machine's history does not "
                f"keep; nothing was changed. `skillshelf update {entry.name}` reviews what the source holds now"
            )
        drop(staged, leaf)
        restore(root, kept, staged, leaf)


def drop(folder: Path, leaf: str) -> None:
    """Delete the skill `leaf` (a folder, or a three-file skill's group of files) from a staged folder."""
    entries = skill_entries(folder, leaf)
    if (folder / leaf).is_dir() and not (folder / leaf).is_symlink():
        shutil.rmtree(folder / leaf)
        return
    for entry in entries:
        entry.on_disk.unlink(missing_ok=True)


# -- comparing ---------------------------------------------------------------------------------------
def diff(root: Path, kept: Version, skill_path: str | None) -> list[str]:
    """A unified diff of every file from revision `kept` (a/) to what is installed at `skill_path` (b/);
    None or a skill that is not there: every file deleted."""
    old = {f.path: (f.kind, blob_bytes(root, f.blob)) for f in kept.files}
    new = {e.path: (e.kind, _bytes_of(e)) for e in _installed(root, skill_path)}
    lines: list[str] = []
    for path in sorted(old.keys() | new.keys()):
        lines += _file_diff(path, old.get(path), new.get(path), kept.rev)
    return lines


def _installed(root: Path, skill_path: str | None) -> list[TreeEntry]:
    if skill_path is None or skill_digest(root, skill_path) is None:
        return []
    return [e for e in skill_entries(root, skill_path) if e.kind != "other"]


def _file_diff(path: str, old: tuple[str, bytes] | None, new: tuple[str, bytes] | None, rev: int) -> list[str]:
    if old == new:
        return []
    before, after = f"a/{path}" if old else "/dev/null", f"b/{path}" if new else "/dev/null"
    head = [f"diff rev {rev} -> installed: {path}"]
    if old and new and old[0] != new[0]:
        head.append(f"kind {old[0]} -> {new[0]}")
    old_text, new_text = _text(old), _text(new)
    if old_text is None or new_text is None:
        return [*head, f"Binary files {before} and {after} differ"]
    body = difflib.unified_diff(old_text, new_text, before, after, n=DIFF_CONTEXT, lineterm="")
    return [*head, *body]


def _text(found: tuple[str, bytes] | None) -> list[str] | None:
    """A file's lines ([] for none); None when it is not text (NUL bytes or not UTF-8)."""
    if found is None:
        return []
    kind, data = found
    if kind == "link":
        return [f"-> {os.fsdecode(data)}"]
    if b"\0" in data:
        return None
    try:
        return data.decode("utf-8").splitlines()
    except UnicodeDecodeError:
        return None
