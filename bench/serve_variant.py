"""`skillshelf serve` with internal switches set: the variants bench/ab.py compares side by side.

    python bench/serve_variant.py [--sdk-stdio] [--no-gc-freeze] serve --library DIR [serve options]

--sdk-stdio     the SDK's stdio transport even when stdin and stdout are pipes
                (skillshelf.server.stdio.OWN_TRANSPORT_ON_PIPES = False). Only commit efc4729 has that
                switch: skillshelf's own transport on pipes was measured with it, then removed (issue 20);
                bench/ab.py runs that commit with `--variant NAME=git:efc4729:--sdk-stdio`
--no-gc-freeze  `gc.freeze` does nothing, so the server's heap stays in the garbage collector's sight

Neither is a user setting: they exist to measure what a piece of the server is worth. Without a switch,
this is `python -m skillshelf`, whichever skillshelf is first on the import path (PYTHONPATH picks an
older snapshot, see bench/ab.py).
"""

from __future__ import annotations

import gc
import sys

SWITCHES = ("--sdk-stdio", "--no-gc-freeze")


def apply(switches: list[str]) -> None:
    if "--sdk-stdio" in switches:
        from skillshelf.server import stdio

        if not hasattr(stdio, "OWN_TRANSPORT_ON_PIPES"):
            sys.exit(f"serve_variant: {stdio.__file__} has no OWN_TRANSPORT_ON_PIPES switch; drop --sdk-stdio")
        stdio.OWN_TRANSPORT_ON_PIPES = False
    if "--no-gc-freeze" in switches:
        gc.freeze = lambda: None


def main() -> None:
    args = sys.argv[1:]
    switches = [a for a in args if a in SWITCHES]
    apply(switches)
    from skillshelf.cli import main as skillshelf

    sys.argv = ["skillshelf", *(a for a in args if a not in SWITCHES)]
    skillshelf()


if __name__ == "__main__":  # guarded: parse workers are spawned and re-import the main module
    main()
