"""Where a library's state lives: its roots, the folder of its index and usage, and which roots may be written.

The first writable root's .skillshelf/ holds them, unless the root says it is read-only (`READ_ONLY_MARKER`,
the settings' read-only roots, a folder with no write bit); otherwise the user cache does. The folder rules
every derived store shares (names, pruning, the cache folder) are library/indexing/folders.py's.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from skillshelf.library.indexing.folders import (
    INDEX_DIR_NAME,
    own_state_dir,
    prune_old_stores,
    store_name,
    user_cache_dir,
    writable,
)
from skillshelf.library.skill.paths import display_path
from skillshelf.library.skill.reading import DEFAULT_MAX_FILE_BYTES
from skillshelf.library.usage.events import UsageEvents
from skillshelf.library.usage.store import BUSY_TIMEOUT_S, USAGE_FILE

logger = logging.getLogger(__name__)

# A library root holding this file is never written to: its index and usage go to the user cache
# (the bundled examples carry it, so serving a source checkout leaves the checkout clean).
READ_ONLY_MARKER = ".skillshelf-readonly"


@dataclass
class LibraryConfig:
    roots: list[Path]
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    index_dir: Path | None = None  # None: first writable root's .skillshelf/, else the user cache
    read_only_roots: frozenset[Path] = field(default_factory=frozenset)  # never write an index here
    watch: bool = True
    usage_busy_timeout: float = BUSY_TIMEOUT_S  # seconds to wait for another process's lock on usage
    semantic_model: Path | None = None  # a sentence-transformers BERT folder: search by meaning too
    cache_dir: Path | None = None  # the cache_dir setting; None: the platform's user cache folder
    # Opens the usage events (the embedded path, busy timeout) in the store the settings chose (state/
    # open_stores): the library never picks a backend. None: the embedded SQLite file.
    open_usage: Callable[[Path, float], UsageEvents] | None = None


def choose_index_path(config: LibraryConfig) -> Path:
    state_dir = choose_state_dir(config)
    return state_dir / store_name("index", config.roots, state_dir)


def choose_state_dir(config: LibraryConfig) -> Path:
    """Where the index and usage events live: the first writable root's .skillshelf/, else the cache."""
    if config.index_dir is not None:
        return config.index_dir
    for root in config.roots:
        if root in config.read_only_roots or not root.is_dir() or not writable(root):
            continue
        if (root / READ_ONLY_MARKER).exists():
            continue
        try:
            return own_state_dir(root)
        except OSError:
            _warn_if_usage_moves(root / INDEX_DIR_NAME, user_cache_dir(config.cache_dir))
    return user_cache_dir(config.cache_dir)


def _warn_if_usage_moves(unwritable: Path, cache: Path) -> None:
    """History left in a folder that can no longer be written is not silently split from the new one."""
    if (unwritable / USAGE_FILE).exists():
        logger.warning(
            "%s cannot be written, so usage is recorded in %s from now on; earlier uses stay in %s. "
            "Make the folder writable again to keep one history.",
            display_path(unwritable),
            display_path(cache),
            display_path(unwritable / USAGE_FILE),
        )


@dataclass(frozen=True)
class Places:
    """A library's roots (resolved where they exist), its state folder and the index file chosen in it."""

    roots: list[Path]
    state_dir: Path
    index_file: Path

    @classmethod
    def of(cls, config: LibraryConfig) -> Places:
        roots = [r.expanduser().resolve() if r.exists() else r.expanduser() for r in config.roots]
        resolved = LibraryConfig(**{**config.__dict__, "roots": roots})
        state_dir = choose_state_dir(resolved)
        if config.index_dir is None:
            prune_old_stores(state_dir)
        return cls(roots, state_dir, choose_index_path(resolved))

    def vectors_beside(self, index_path: Path) -> Path:
        """The meaning vectors of these roots, beside the index (elsewhere when its folder cannot be written)."""
        return index_path.parent / store_name("vectors", self.roots, index_path.parent)
