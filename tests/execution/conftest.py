"""A library of skills that misbehave on purpose, for the execution tests (real processes)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.settings import ExecutionSettings
from tests.conftest import agent_skill, generated_library, three_file, wait_until_async, write

PY_SKILLS = {
    "echo": (
        "def echo(text: str, times: int = 1) -> dict:\n"
        "    print('noise on stdout')\n    return {'echo': text * times}\n"
    ),
    "spin": "def spin() -> None:\n    while True:\n        pass\n",
    "hog": "def hog(mb: int) -> int:\n    block = bytearray(mb * 1024 * 1024)\n    return len(block)\n",
    "forker": (
        "import os, time\n"
        "def forker(n: int) -> dict:\n"
        "    made = failed = 0\n"
        "    for _ in range(n):\n"
        "        try:\n"
        "            pid = os.fork()\n"
        "        except OSError:\n"
        "            failed += 1\n"
        "            continue\n"
        "        if pid == 0:\n"
        "            time.sleep(3)\n"
        "            os._exit(0)\n"
        "        made += 1\n"
        "    return {'made': made, 'failed': failed}\n"
    ),
    "leak": "import os\ndef leak() -> dict:\n    return dict(os.environ)\n",
    "boom": (
        "def helper(x: int) -> None:\n    raise ValueError(f'bad input: {x}')\n\ndef boom() -> None:\n    helper(42)\n"
    ),
    "sleeper": (
        "import os, time\n"
        "from pathlib import Path\n"
        "def sleeper(token: str, seconds: float) -> str:\n"
        "    Path(token).write_text(str(os.getpid()))  # in its working directory: visible in a sandbox too\n"
        "    time.sleep(seconds)\n"
        "    return 'woke'\n"
    ),
    "chatty": (
        "import sys\ndef chatty() -> int:\n    for _ in range(2000):\n        sys.stderr.write('x' * 1000 + '\\n')\n"
        "    return 1\n"
    ),
    "viarun": "def run(input: dict) -> dict:\n    return {'keys': sorted(input)}\n",
}


async def started_run(token: str) -> list[int]:
    """Wait for the run whose skill wrote `token` into its working directory; its processes' host pids.

    In a sandbox the working directory is a tmpfs of the sandbox's own, so the file is looked for
    through each candidate process's root (`/proc/PID/root`), not in the host's directory.
    """
    found: list[int] = []

    def started() -> bool:
        found[:] = [pid for pid, cwd in _run_processes() if _holds(pid, cwd, token)]
        return bool(found)

    await wait_until_async(started, f"no run wrote {token!r}")
    work_dir = _cwd(found[0])
    return [pid for pid in _pids() if _cwd(pid) == work_dir]


def _run_processes() -> list[tuple[int, str]]:
    """(pid, working directory) of every process working in a run's directory."""
    found = []
    for pid in _pids():
        cwd = _cwd(pid)
        if cwd is not None and Path(cwd).name.startswith("skillshelf-run-"):
            found.append((pid, cwd))
    return found


def _holds(pid: int, cwd: str, token: str) -> bool:
    try:
        return bool(Path(f"/proc/{pid}/root{cwd}/{token}").read_text())
    except OSError:
        return False


def _pids() -> list[int]:
    return [int(entry.name) for entry in os.scandir("/proc") if entry.name.isdigit()]


def _cwd(pid: int) -> str | None:
    try:
        return str(Path(f"/proc/{pid}/cwd").readlink())
    except OSError:
        return None


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "zombie" not in status.lower()


async def all_gone(pids: list[int]) -> None:
    await wait_until_async(lambda: not any(alive(pid) for pid in pids), f"still running: {pids}")


@pytest.fixture
def run_root(tmp_path: Path) -> Path:
    root = tmp_path / "runlib"
    for name, code in PY_SKILLS.items():
        three_file(root, "run", name, f"# {name}\n\nA test skill called {name}.\n", code=code)
    three_file(
        root,
        "run",
        "marker",
        "# marker\n\nWrites a file when it runs.\n",
        code="from pathlib import Path\ndef marker(path: str, count: int) -> None:\n    Path(path).write_text('ran')\n",
        meta="---\ninput_schema:\n  type: object\n  properties:\n    path: {type: string}\n    count: {type: integer}\n"
        "  required: [path, count]\n---\n",
    )
    three_file(root, "run", "docs-only", "# Docs only\n\nNothing to run here.\n")
    agent_skill(root, "run", "tools", "name: tools\ndescription: Scripts that behave and misbehave.")
    scripts = root / "run" / "tools" / "scripts"
    write(scripts / "ok.sh", '#!/bin/sh\nset -eu\nline=$(cat)\necho "{\\"got\\": $line}"\n')
    write(scripts / "text.py", "print('plain words, not json')\n")
    write(scripts / "flood.py", "import sys\nchunk = 'y' * 65536\nfor _ in range(1600):\n    sys.stdout.write(chunk)\n")
    write(scripts / "fail.py", "import sys\nsys.stderr.write('it broke\\n')\nsys.exit(3)\n")
    outside = tmp_path / "outside.py"
    outside.write_text("print('escaped')\n", encoding="utf-8")
    (scripts / "evil.py").symlink_to(outside)
    return root


@pytest.fixture
def run_library(run_root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    library = SkillLibrary(LibraryConfig(roots=[run_root], index_dir=tmp_path / "idx", watch=False))
    library.sync()
    yield library
    library.close()


@pytest.fixture
def enabled() -> ExecutionSettings:
    return ExecutionSettings(enabled=True, timeout_s=20, memory_mb=256, max_processes=16)


@pytest.fixture(scope="session")
def large_library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """3,000 generated skills (bench/generate.py): a first index that takes seconds."""
    return generated_library(tmp_path_factory, 3000)
