"""What a library says about itself: /health's status, and the warning every answer carries while its
index may be missing skills or was just rebuilt."""

from __future__ import annotations

import datetime as dt

from skillshelf.library.index.store import SkillIndex
from skillshelf.library.index.sync import LibrarySync
from skillshelf.library.semantic.vectors import SemanticIndex


class LibraryHealth:
    """/health's part of a library: read from its sync, its index and its vectors."""

    def __init__(self, sync: LibrarySync, index: SkillIndex, semantic: SemanticIndex | None) -> None:
        self.sync = sync
        self.index = index
        self.semantic = semantic
        self.digest = sync.digest
        self._announced: object = None  # the index renewal the answers have told about

    def status(self) -> dict[str, object]:
        """For /health: 'indexing' (with progress) during the first build, 'degraded' after a failed sync;
        how fresh the index is; the library's content digest (replicas compare it); a damaged index this
        process rebuilt, and an index kept out of its folder."""
        return {**self._state(), "index": self._freshness(), "library": self._digest_status(), **self._index_notes()}

    def _digest_status(self) -> dict[str, object]:
        """The content digest, worked out from the first time it is asked for (an HTTP server's /health; a
        stdio server never pays for it), then after every sync."""
        if not self.digest.wanted:
            self.digest.wanted = True
            if self.sync.sources is not None:
                self.digest.request(self.sync.sources)
        return self.digest.status()

    def _freshness(self) -> dict[str, object]:
        """When the index last matched the files, and whether changes reach it by themselves (`changes`)."""
        synced = self.sync.synced_wall
        at = dt.datetime.fromtimestamp(synced, dt.UTC).isoformat(timespec="seconds") if synced else None
        return {"syncedAt": at, "changes": self.sync.changes()}

    def _state(self) -> dict[str, object]:
        if self.sync.sync_error is not None:
            return {"status": "degraded", "indexError": self.sync.sync_error}
        if self.sync.building():
            parsed, total = self.sync.progress
            return {"status": "indexing", "progress": {"parsed": parsed, "toParse": total}}
        if self.semantic is not None:
            return {"status": "healthy", "semantic": self.semantic.status()}
        return {"status": "healthy"}

    def _index_notes(self) -> dict[str, object]:
        notes: dict[str, object] = {}
        renewal = self.index.renewal
        if renewal is not None:
            notes["indexRebuilt"] = {"reason": renewal.reason, "keptAs": renewal.kept_as, "at": renewal.at}
        if self.index.fallback is not None:
            notes["indexLocation"] = self.index.fallback
        return notes

    def index_warning(self) -> str | None:
        """Said with every answer while the index may be missing skills (its last sync failed), and with
        the first answer after a damaged index was rebuilt."""
        if self.sync.sync_error is not None:
            return (
                f"The search index may be incomplete: its last update failed ({self.sync.sync_error}). These results "
                "can miss skills; the update is retried on the next call."
            )
        renewal = self.index.renewal
        if renewal is None or renewal is self._announced:
            return None
        self._announced = renewal
        return renewal.notice(self.index.LABEL)
