"""Where a skill came from, for the surfaces that show it (show, the web view, skills/get, loadSkill).

`provenance_of(root, skill_path)` answers from the root's `skillshelf.lock`, read once and kept until
the file changes (its size, modification time or inode): asking for every skill of a page costs a
`stat` and a dictionary lookup. A skill no source installed (written by hand) has none.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from skillshelf.library.skill.discovery import CODE_EXTENSIONS, METADATA_SUFFIX
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.lock import LOCK_NAME, Lock, read_lock
from skillshelf.library.sources.spec import strip_credentials


@dataclass(frozen=True)
class Provenance:
    source: str  # the source's name in the lock
    kind: str  # git, archive, folder or file
    url: str  # without credentials
    commit: str  # the git commit, or the content digest ('sha256:...') of an archive, folder or file
    license: str | None  # the skill's own frontmatter license, else the source's (SPDX id or 'see LICENSE')

    @property
    def brief(self) -> str:
        """One short field: 'anthropic@9d2f1ae1 (Apache-2.0)'."""
        version = self.commit.removeprefix("sha256:")[:8]
        return f"{self.source}@{version}" + (f" ({self.license})" if self.license else "")


_Signature = tuple[int, int, int]
_cache: dict[Path, tuple[_Signature | None, dict[str, Provenance]]] = {}
_cache_lock = threading.Lock()


def provenance_of(root: Path, skill_path: str) -> Provenance | None:
    """The provenance of the skill at `skill_path` (relative to `root`, '/'-separated, or absolute): a
    skill's folder, its SKILL.md, a three-file skill's .md (or any of its files); None when no source in
    the root's lock installed it, or the root has no lock."""
    by_path = _index(root)
    if not by_path:
        return None
    relative = _relative(root, skill_path)
    if relative is None:
        return None
    for candidate in _candidates(relative):
        found = by_path.get(candidate)
        if found is not None:
            return found
    return None


def provenance_for_id(root: Path, skill_id: str) -> Provenance | None:
    """The same, by skill id (`<source>/<skill>`)."""
    return _index(root).get("id:" + skill_id)


def _index(root: Path) -> dict[str, Provenance]:
    lock_file = root / LOCK_NAME
    signature = _signature(lock_file)
    with _cache_lock:
        cached = _cache.get(root)
        if cached is not None and cached[0] == signature:
            return cached[1]
    index = _build(lock_file) if signature is not None else {}
    with _cache_lock:
        _cache[root] = (signature, index)
    return index


def _signature(path: Path) -> _Signature | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return (info.st_mtime_ns, info.st_size, info.st_ino)


def _build(lock_file: Path) -> dict[str, Provenance]:
    try:
        lock = read_lock(lock_file)
    except SourceError:
        return {}  # `skillshelf sources` and `sync` say what is wrong with it; no surface fails for it
    return _by_path(lock)


def _by_path(lock: Lock) -> dict[str, Provenance]:
    index: dict[str, Provenance] = {}
    for source in lock.sources.values():
        for skill in source.skills:
            url = strip_credentials(source.url)  # again here: a hand-written lock may hold a token
            found = Provenance(source.name, source.kind, url, source.version, skill.license or source.license)
            index[skill.path] = found
            index["id:" + skill.id] = found
    return index


def _relative(root: Path, skill_path: str) -> str | None:
    path = Path(skill_path)
    if not path.is_absolute():
        return PurePosixPath(skill_path.replace(os.sep, "/")).as_posix().strip("/")
    for base in (root, root.resolve()):
        try:
            return path.relative_to(base).as_posix()
        except ValueError:
            continue
    return None


def _candidates(relative: str) -> list[str]:
    """The lock paths `relative` may belong to: itself, the folders above it, a three-file skill's .md."""
    pure = PurePosixPath(relative)
    found = [relative, *(str(parent) for parent in pure.parents if str(parent) != ".")]
    name = pure.name
    found += [
        str(pure.with_name(name[: -len(suffix)] + ".md"))
        for suffix in (METADATA_SUFFIX, *CODE_EXTENSIONS)
        if name.endswith(suffix)
    ]
    return found
