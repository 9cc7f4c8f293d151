"""The file watcher's own process: `python -m skillshelf.library.indexing.watch_child --recursive|--flat ROOT...`.

watchfiles registers its watches while holding the GIL (about 7 s for 100,000 skill folders, half a
second for 10,000), and a server in the same process answers nothing meanwhile. Here the watches
live in a child: it prints `ready` once they are in place, then `change` after each batch of changes
(anything under `.skillshelf/`, where the indexes live, ignored), and exits when its stdin closes,
which happens when the server stops or dies. Imports nothing from skillshelf beyond this module and
the ignore list (library/skill/ignored.py).

A recursive watch is one non-recursive watch per folder this process lists itself, never following
a symlink: watchfiles' own recursion follows them, and one link to `/` made it register 11,225
watches before it gave up (the inotify limit). Dot-folders and the folders discovery skips hold no
skills and are not watched either. When a folder appears, the folders are listed again and watched
anew, and `change` is said once more when they are (covering what changed meanwhile).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from skillshelf.library.skill.ignored import IGNORED_NAMES  # a module of one declaration, no imports

IGNORED_DIR = ".skillshelf"
READY = "ready"
CHANGE = "change"
RELIST_ATTEMPTS = 5  # a folder removed between listing and watching: list again


def watch_roots(roots: list[str], recursive: bool, stop: threading.Event) -> None:
    """Say `ready` once the folders are watched, then `change` after each batch of changes."""
    in_place = READY
    failures = 0
    while not stop.is_set():
        folders = list_folders(roots) if recursive else roots
        try:
            relist = _watch(folders, recursive, stop, in_place)
        except FileNotFoundError:  # one went away between listing and watching
            failures += 1
            if failures >= RELIST_ATTEMPTS:
                raise
            continue
        failures = 0
        in_place = CHANGE  # once watched anew: whatever changed in between
        if not relist:
            return


def list_folders(roots: list[str]) -> list[str]:
    """The roots and every real folder under them: symlinks, dot-folders and IGNORED_NAMES skipped."""
    found = list(roots)
    pending = list(roots)
    while pending:
        try:
            with os.scandir(pending.pop()) as listing:
                for entry in listing:
                    if _worth_watching(entry.name) and entry.is_dir(follow_symlinks=False):
                        found.append(entry.path)
                        pending.append(entry.path)
        except OSError:  # gone, or unreadable: nothing to watch there
            continue
    return found


def _worth_watching(name: str) -> bool:
    return not name.startswith(".") and name not in IGNORED_NAMES


def _new_folder(path: str) -> bool:
    folder = Path(path)
    return _worth_watching(folder.name) and folder.is_dir() and not folder.is_symlink()


def _watch(folders: list[str], recursive: bool, stop: threading.Event, in_place: str) -> bool:
    """Watch each of `folders` alone, saying `in_place` once they are, until stopped. True when a new
    folder appeared (the caller lists the folders again)."""
    from watchfiles import Change, DefaultFilter, watch

    class _IgnoreIndex(DefaultFilter):
        def __call__(self, change: Any, path: str) -> bool:
            parts = Path(path).parts
            if IGNORED_DIR in parts:
                return False
            # A build or dependency folder appearing in (or leaving) a watched folder is a change: the approval
            # gate holds back a skill that holds one. DefaultFilter drops `node_modules` and `__pycache__`.
            return parts[-1] in IGNORED_NAMES or bool(super().__call__(change, path))

    registered = False
    for changes in watch(
        *folders,
        watch_filter=_IgnoreIndex(),
        stop_event=stop,
        debounce=100,
        step=20,
        rust_timeout=300,
        yield_on_timeout=True,
        raise_interrupt=False,
        recursive=False,
    ):
        if not registered:
            registered = True  # the first yield proves the watch is in place
            say(in_place)
        if changes:
            say(CHANGE)
            if recursive and any(kind == Change.added and _new_folder(path) for kind, path in changes):
                return True
    return False


def say(word: str) -> None:
    sys.stdout.write(word + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in ("--recursive", "--flat"):
        sys.stderr.write("usage: python -m skillshelf.library.indexing.watch_child --recursive|--flat ROOT...\n")
        return 2
    # Ctrl-C on a terminal reaches the whole process group: the server stops, and this process ends when its
    # stdin closes (watchfiles would print "KeyboardInterrupt caught, stopping watch" after the server's line).
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    stop = threading.Event()

    def until_parent_goes() -> None:
        sys.stdin.buffer.read()  # EOF: the server closed the pipe or is gone
        stop.set()

    threading.Thread(target=until_parent_goes, daemon=True).start()
    try:
        watch_roots(args[1:], args[0] == "--recursive", stop)
    except BrokenPipeError:
        return 0
    except Exception as exc:  # the server falls back to checking files on reads, and says so
        sys.stderr.write(f"skillshelf file watcher: {type(exc).__name__}: {exc}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
