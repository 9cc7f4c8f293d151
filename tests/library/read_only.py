"""Making files and folders really read-only in a test, whoever runs it.

Permission bits stop an ordinary user, but root ignores them (and these tests also run as root in
containers). For root, the paths are made immutable (`chattr +i`): then even root cannot write,
create or delete there (EPERM), as on a read-only mount. Where neither works (root on a
filesystem without the attribute, such as tmpfs), the test is skipped, never passed vacuously.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


def _is_root() -> bool:
    return hasattr(os, "geteuid") and os.geteuid() == 0


@contextmanager
def read_only(*paths: Path) -> Iterator[None]:
    """Within the block, nobody (root included) can write to `paths` (files, or folders' entries)."""
    if not _is_root():
        modes = {path: path.stat().st_mode for path in paths}
        for path in paths:
            path.chmod(0o555 if path.is_dir() else 0o444)
        try:
            yield
        finally:
            for path, mode in modes.items():
                path.chmod(mode)
        return
    chattr = shutil.which("chattr")
    if chattr is None:
        pytest.skip("running as root without chattr: nothing here can make a path read-only for root")
    done = subprocess.run([chattr, "+i", *map(str, paths)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        subprocess.run([chattr, "-i", *map(str, paths)], capture_output=True, check=False)
        pytest.skip(f"running as root and chattr +i failed: {done.stderr.strip()}")
    try:
        assert not os.access(paths[0], os.W_OK), "chattr +i did not make the path read-only"
        yield
    finally:
        subprocess.run([chattr, "-i", *map(str, paths)], capture_output=True, check=True)
