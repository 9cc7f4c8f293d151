"""The file watcher's own process: `python -m skillshelf.library.index.watch_child --recursive|--flat ROOT...`.

watchfiles registers its watches while holding the GIL (about 7 s for 100,000 skill folders, half a
second for 10,000), and a server in the same process answers nothing meanwhile. Here the watches
live in a child: it prints `ready` once they are in place, then `change` after each batch of changes
(anything under `.skillshelf/`, where the indexes live, ignored), and exits when its stdin closes,
which happens when the server stops or dies. Imports nothing from skillshelf beyond this module.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

IGNORED_DIR = ".skillshelf"
READY = "ready"
CHANGE = "change"


def watch_roots(roots: list[str], recursive: bool, stop: threading.Event) -> None:
    from watchfiles import DefaultFilter, watch

    class _IgnoreIndex(DefaultFilter):
        def __call__(self, change: Any, path: str) -> bool:
            return IGNORED_DIR not in Path(path).parts and bool(super().__call__(change, path))

    registered = False
    for changes in watch(
        *roots,
        watch_filter=_IgnoreIndex(),
        stop_event=stop,
        debounce=100,
        step=20,
        rust_timeout=300,
        yield_on_timeout=True,
        raise_interrupt=False,
        recursive=recursive,
    ):
        if not registered:
            registered = True  # the first yield proves the watch is in place
            say(READY)
        elif changes:
            say(CHANGE)


def say(word: str) -> None:
    sys.stdout.write(word + "\n")
    sys.stdout.flush()


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if not args or args[0] not in ("--recursive", "--flat"):
        sys.stderr.write("usage: python -m skillshelf.library.index.watch_child --recursive|--flat ROOT...\n")
        return 2
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
