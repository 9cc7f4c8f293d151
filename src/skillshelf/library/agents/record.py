"""The install record: what `skillshelf install` put where, from which skill and digest.

One JSON file per user, `installs.json` in skillshelf's state folder (`state_dir`, beside the call
log), rather than a file in each agent's folder or in the library:

- installs go into many folders (the home folder's and any project's), and `install --check` and
  `--sync` with no folder named must find every one of them;
- a file in an agent's folder would be read by that agent (or committed with a project's
  `.claude/skills`), and a library may be read-only or have several roots.

The record is input like any other file: each entry is checked where it is read (an absolute folder,
a valid skill name, files named by relative paths under the one path rule), so a tampered record
cannot make `uninstall` remove anything outside a skill folder it names.

Every change is a read-modify-write under the record's lock (`updating`): two `install` runs at once
(into two agents) would otherwise each write back what they read, and the later would drop the earlier's
entries.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from skillshelf.library.access.files import SkillFileError, normalise
from skillshelf.library.locks import file_lock
from skillshelf.library.skill.layouts import valid_name
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.lock import write_atomically

logger = logging.getLogger(__name__)

RECORD = "installs.json"
VERSION = 1


class RecordError(Exception):
    """The record cannot be read or written; the message says which file and what to do."""


@dataclass
class Install:
    """One skill folder in one agent's skills folder."""

    folder: str  # the skills folder, absolute
    name: str  # the skill's folder name in it
    agents: list[str]  # the agents this install is for (agents sharing `.agents/skills` share it)
    skill: str  # the library's skill id
    view: str | None  # the view it was read through (None: the whole library)
    mode: str  # "copy" or "link"
    digest: str  # the digest of the skill's files as the reader served them
    files: dict[str, str]  # path in the skill folder -> sha256 of what was written (copy)
    description_chars: int = 0
    project: str | None = None  # the project folder, for a project install
    link: str | None = None  # the link's target (link)
    origin: str = ""  # the skill's folder in the library (a three-file skill: its category's)

    @property
    def path(self) -> Path:
        return Path(self.folder) / self.name


@dataclass
class Record:
    installs: list[Install] = field(default_factory=list)
    created: dict[str, list[str]] = field(default_factory=dict)  # skills folder -> folders install made for it

    def at(self, folder: Path, name: str) -> Install | None:
        return next((i for i in self.installs if i.folder == str(folder) and i.name == name), None)

    def of(self, agent: str | None = None, folder: Path | None = None) -> list[Install]:
        return [
            i
            for i in self.installs
            if (agent is None or agent in i.agents) and (folder is None or i.folder == str(folder))
        ]


def reaching(record: Record, folder: Path) -> dict[str, list[Install]]:
    """The installs of skills under `folder` (a source's folder in a library), by agent: what an update of
    that source reaches once `install --sync` runs."""
    found: dict[str, list[Install]] = {}
    for entry in record.installs:
        if under(entry.origin, folder):
            for agent in entry.agents:
                found.setdefault(agent, []).append(entry)
    return found


def under(origin: str, folder: Path) -> bool:
    """Is the skill folder `origin` (as recorded) inside `folder`, as written or with links resolved?"""
    if not origin:
        return False
    path = Path(origin)
    return path.is_relative_to(folder) or path.resolve().is_relative_to(folder.resolve())


def reach_line(record: Record, folder: Path) -> str | None:
    """One sentence for `update` and `sources`: which agents have skills of `folder` installed."""
    found = reaching(record, folder)
    if not found:
        return None
    agents = ", ".join(f"{agent} ({len(entries)})" for agent, entries in sorted(found.items()))
    return f"installed for {agents}: `skillshelf install --sync` brings the update to them"


def record_path(state_dir: Path) -> Path:
    return state_dir / RECORD


def read_record(state_dir: Path) -> Record:
    path = record_path(state_dir)
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return Record()
    except (OSError, ValueError) as exc:
        raise RecordError(
            f"cannot read {path} ({exc}); fix or remove it (installed skills stay where they are)"
        ) from exc
    if not isinstance(raw, dict) or raw.get("version") != VERSION:
        raise RecordError(f"{path} is not a skillshelf install record (version {VERSION}); fix or remove it")
    installs = [entry for entry in map(_install, raw.get("installs") or []) if entry is not None]
    created = raw.get("created")
    made = created if isinstance(created, dict) else {}
    return Record(installs, {str(k): [str(p) for p in v if _absolute(p)] for k, v in made.items() if _absolute(k)})


@contextmanager
def updating(state_dir: Path) -> Iterator[Record]:
    """The record, read and (when the block ends without an error and changed it) written back, with its
    lock held throughout: what another process adds meanwhile waits, so no entry is lost."""
    path = record_path(state_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)  # else the lock's file cannot be made, and nothing waits
    except OSError as exc:
        raise RecordError(f"cannot create {path.parent} ({exc}); is skillshelf's state folder writable?") from exc
    with file_lock(path.with_name(RECORD + ".lock")):
        record = read_record(state_dir)
        before = _serialised(record)
        yield record
        if _serialised(record) != before:
            write_record(state_dir, record)


def write_record(state_dir: Path, record: Record) -> None:
    path = record_path(state_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, _serialised(record))
    except (OSError, SourceError) as exc:
        raise RecordError(f"cannot write {path} ({exc}); is skillshelf's state folder writable?") from exc


def _serialised(record: Record) -> str:
    payload = {"version": VERSION, "installs": [asdict(i) for i in record.installs], "created": record.created}
    return json.dumps(payload, indent=1, sort_keys=True) + "\n"


def _install(raw: Any) -> Install | None:
    """An entry as read, or None (logged) when any field breaks its rule."""
    try:
        entry = Install(**raw)
        _check(entry)
    except (TypeError, ValueError, SkillFileError) as exc:
        logger.warning("ignoring an entry of the install record: %s", exc)
        return None
    return entry


def _check(entry: Install) -> None:
    if not _absolute(entry.folder) or not valid_name(entry.name):
        raise ValueError(f"folder {entry.folder!r} and name {entry.name!r} must be absolute and a skill name")
    if entry.mode not in ("copy", "link") or not all(isinstance(a, str) for a in entry.agents):
        raise ValueError(f"{entry.name}: mode {entry.mode!r} or agents {entry.agents!r}")
    if not isinstance(entry.files, dict) or not isinstance(entry.digest, str) or not isinstance(entry.skill, str):
        raise ValueError(f"{entry.name}: files, digest and skill must be a mapping and strings")
    for served in entry.files:
        if normalise(entry.skill, served) != served:
            raise ValueError(f"{entry.name}: file {served!r} is not a plain relative path")


def _absolute(value: object) -> bool:
    return isinstance(value, str) and Path(value).is_absolute() and ".." not in Path(value).parts
