"""The library's content digest, for /health: replicas serving the same checkout report the same one.

SHA-256 over each skill's digest (skill/digest.py: its files' kinds, paths and bytes, never their times),
each under its root's position and its path in that root, in order: two hosts with the same files at
other paths or other modification times agree; a replica that drifted (an older checkout, an edit on one
host) does not. It is worked out on a thread of its own, from the first time it is asked for (a stdio server
never is) and after each sync from then on; a skill whose files have the same stat stamps as last time
keeps its digest, so only changed skills are read again.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import logging
import threading
from collections.abc import Sequence

from skillshelf.library.skill.digest import PREFIX, TreeEntry, digest_entries, skill_entries
from skillshelf.library.skill.models import SkillSource

logger = logging.getLogger(__name__)

Stamp = tuple[tuple[str, int, int, int], ...]  # each file's path, mtime, size and mode


class LibraryDigest:
    """`request(sources)` after a sync; `status()` what /health shows (`digest` None until the first pass)."""

    def __init__(self) -> None:
        self.value: str | None = None
        self.skills = 0
        self.computed_at: str | None = None
        self.error: str | None = None
        self.wanted = False  # someone asked for it: the library keeps it up to date from then on
        self._known: dict[str, tuple[Stamp, str | None]] = {}  # per source key
        self._pending: Sequence[SkillSource] | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)

    def request(self, sources: Sequence[SkillSource]) -> None:
        """Work the digest out again for these sources, in the background (the latest request wins)."""
        with self._lock:
            self._pending = list(sources)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="skillshelf-library-digest", daemon=True)
                self._thread.start()

    def wait(self, timeout: float | None = None) -> bool:
        """Until no pass is under way or asked for (for tests and `skillshelf` commands)."""
        with self._idle:
            return self._idle.wait_for(lambda: self._thread is None, timeout)

    def status(self) -> dict[str, object]:
        if self.value is None:
            state = "failed" if self.error else "computing"
            return {"digest": None, "state": state, **({"error": self.error} if self.error else {})}
        return {"digest": self.value, "skills": self.skills, "computedAt": self.computed_at}

    def _run(self) -> None:
        while True:
            with self._lock:
                sources, self._pending = self._pending, None
                if sources is None:
                    self._thread = None
                    self._idle.notify_all()
                    return
            try:
                value = self._compute(sources)
            except Exception as exc:  # a digest never takes the server down: /health says it failed
                logger.exception("the library digest could not be worked out")
                self.error = f"{type(exc).__name__}: {exc}"
                continue
            self.value, self.skills, self.error = value, len(sources), None
            self.computed_at = dt.datetime.now(dt.UTC).isoformat(timespec="seconds")

    def _compute(self, sources: Sequence[SkillSource]) -> str:
        known: dict[str, tuple[Stamp, str | None]] = {}
        whole = hashlib.sha256()
        for source in sorted(sources, key=lambda s: s.key):
            entries = skill_entries(source.root, skill_path(source))
            stamp = _stamp(entries)
            previous = self._known.get(source.key)
            digest = previous[1] if previous is not None and previous[0] == stamp else None
            if digest is None:
                digest = digest_entries(entries) if entries else None
            known[source.key] = (stamp, digest)
            whole.update(f"{source.key}\0{digest}\n".encode())
        self._known = known
        return PREFIX + whole.hexdigest()


def skill_path(source: SkillSource) -> str:
    """The skill's path in its root as the skill digest takes it: an Agent Skill's folder, a three-file
    skill's document."""
    where = source.doc_file.parent if source.layout == "agent-skills" else source.doc_file
    return where.relative_to(source.root).as_posix()


def _stamp(entries: list[TreeEntry]) -> Stamp:
    return tuple((e.path, e.info.st_mtime_ns, e.info.st_size, e.info.st_mode) for e in entries)
