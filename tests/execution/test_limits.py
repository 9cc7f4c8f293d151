"""A run's totals are bounded, not only each process: memory for the whole run (a memory cgroup), the
sandbox's /tmp and working directory (sized tmpfs), and without the sandbox the working directory's
size (checked, the run stopped); each limit is in the run description. And names no file system
takes are a clear VALIDATION_ERROR.

The attacks that used to pass: 15 files of 200 MB in the sandbox's /tmp (3 GB of RAM), 3 GB written
into the working directory, 12 children of 250 MB each under their own RLIMIT_AS (3 GB at once).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.execution import sandbox, service
from skillshelf.execution.containment import RunCgroup
from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.settings import ExecutionSettings, Settings
from tests.conftest import agent_skill, three_file, write

pytestmark = pytest.mark.anyio

ISOLATION = sandbox.isolation(True)
needs_sized_tmpfs = pytest.mark.skipif(
    not (ISOLATION.sandboxed and ISOLATION.sized_tmpfs), reason=f"no bubblewrap with --size here: {ISOLATION.note}"
)
needs_memory_cgroup = pytest.mark.skipif(
    not RunCgroup.available().memory, reason="no memory cgroup can be made here (needs root or a delegated subtree)"
)
MB = 1024 * 1024

SKILLS = {
    "fill": (
        "import os\n"
        "def fill(folder: str, files: int, mb: int) -> dict:\n"
        "    # write `files` files of `mb` MB into `folder` until the file system refuses\n"
        "    written = 0\n"
        "    chunk = b'x' * (1024 * 1024)\n"
        "    try:\n"
        "        for n in range(files):\n"
        "            with open(os.path.join(folder, f'f{n}'), 'wb') as handle:\n"
        "                for _ in range(mb):\n"
        "                    handle.write(chunk)\n"
        "                    handle.flush()\n"
        "                    written += 1\n"
        "    except OSError as exc:\n"
        "        return {'mb': written, 'error': type(exc).__name__}\n"
        "    return {'mb': written}\n"
    ),
    "hold": (
        "import os, select\n"
        "def hold(children: int, mb: int) -> dict:\n"
        "    # children that each touch `mb` MB and keep it: how many held it at the same time\n"
        "    report_r, report_w = os.pipe()\n"
        "    go_r, go_w = os.pipe()\n"
        "    for _ in range(children):\n"
        "        if os.fork() == 0:\n"
        "            os.close(report_r)\n"
        "            os.close(go_w)\n"
        "            try:\n"
        "                block = bytearray(mb * 1024 * 1024)\n"
        "                for i in range(0, len(block), 4096):\n"
        "                    block[i] = 1\n"
        "            except MemoryError:\n"
        "                os._exit(3)\n"
        "            os.write(report_w, f'{os.getpid()}\\n'.encode())\n"
        "            os.read(go_r, 1)\n"
        "            os._exit(0)\n"
        "    os.close(report_w)\n"
        "    os.close(go_r)\n"
        "    holding, dead, most, pending = set(), set(), 0, b''\n"
        "    while len(holding | dead) < children:\n"
        "        if select.select([report_r], [], [], 0.05)[0]:\n"
        "            pending += os.read(report_r, 4096)\n"
        "            *lines, pending = pending.split(b'\\n')\n"
        "            holding |= {int(line) for line in lines}\n"
        "        while True:\n"
        "            try:\n"
        "                pid, _status = os.waitpid(-1, os.WNOHANG)\n"
        "            except ChildProcessError:\n"
        "                break\n"
        "            if pid == 0:\n"
        "                break\n"
        "            dead.add(pid)\n"
        "        most = max(most, len(holding - dead))\n"
        "    os.close(go_w)\n"
        "    return {'most_at_once': most, 'killed': len(dead)}\n"
    ),
}


@pytest.fixture
def limits_library(tmp_path: Path) -> Iterator[SkillLibrary]:
    root = tmp_path / "lib"
    for name, code in SKILLS.items():
        three_file(root, "limits", name, f"# {name}\n\nPushes a limit: {name}.\n", code=code)
    agent_skill(root, "limits", "tools", "name: tools\ndescription: Scripts.")
    write(root / "limits" / "tools" / "scripts" / "ok.py", "print(1)\n")
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    library.sync()
    yield library
    library.close()


FILL_ONE = {"folder": ".", "files": 1, "mb": 1}
BASE = ExecutionSettings(enabled=True, timeout_s=60, memory_mb=512, max_processes=32)


async def run(library: SkillLibrary, settings: ExecutionSettings, skill: str, payload: dict[str, Any]) -> Any:
    return await service.execute_skill(LibraryReader(library), settings, f"limits/{skill}", payload)


@needs_sized_tmpfs
async def test_the_sandboxs_tmp_holds_at_most_tmp_mb(limits_library: SkillLibrary) -> None:
    settings = BASE.model_copy(update={"tmp_mb": 32})
    result = await run(limits_library, settings, "fill", {"folder": "/tmp", "files": 15, "mb": 16})
    assert result.output["mb"] <= 32 and result.output["error"] == "OSError", result.output
    assert result.ran.tmp_mb == 32


@needs_sized_tmpfs
async def test_the_sandboxs_working_directory_holds_at_most_work_dir_mb(limits_library: SkillLibrary) -> None:
    settings = BASE.model_copy(update={"work_dir_mb": 48})
    result = await run(limits_library, settings, "fill", {"folder": ".", "files": 15, "mb": 16})
    assert result.output["mb"] <= 48 and result.output["error"] == "OSError", result.output
    assert result.ran.work_dir_mb == 48 and result.ran.work_dir_limit == "tmpfs"


async def test_without_the_sandbox_a_run_that_overfills_its_working_directory_is_stopped(
    limits_library: SkillLibrary,
) -> None:
    settings = BASE.model_copy(update={"bubblewrap": False, "work_dir_mb": 32})
    with pytest.raises(SkillshelfError) as raised:
        await run(limits_library, settings, "fill", {"folder": ".", "files": 15, "mb": 16})
    assert raised.value.code == ErrorCode.SKILL_EXECUTION_FAILED
    assert "32 MB" in raised.value.message and "working directory" in raised.value.message
    fits = await run(limits_library, settings, "fill", {"folder": ".", "files": 1, "mb": 8})
    assert fits.output == {"mb": 8} and fits.ran.work_dir_limit == "checked"


@needs_memory_cgroup
@pytest.mark.parametrize("bubblewrap", [True, False], ids=["bubblewrap", "rlimits-only"])
async def test_children_cannot_hold_more_than_run_memory_mb_together(
    limits_library: SkillLibrary, bubblewrap: bool
) -> None:
    if bubblewrap and not ISOLATION.sandboxed:
        pytest.skip(ISOLATION.note)
    settings = BASE.model_copy(update={"bubblewrap": bubblewrap, "run_memory_mb": 256})
    try:
        result = await run(limits_library, settings, "hold", {"children": 6, "mb": 100})
    except SkillshelfError as exc:  # the kernel chose the skill's main process: bounded all the same
        assert exc.code == ErrorCode.SKILL_EXECUTION_FAILED and "SIGKILL" in exc.message
        return
    assert result.output["most_at_once"] <= 2 and result.output["killed"] >= 1, result.output  # 6 fit alone
    assert result.ran.run_memory_mb == 256


@needs_memory_cgroup
@needs_sized_tmpfs
async def test_the_sandboxs_tmpfs_pages_count_against_the_runs_memory(limits_library: SkillLibrary) -> None:
    settings = BASE.model_copy(update={"tmp_mb": 1024, "run_memory_mb": 128})
    try:
        result = await run(limits_library, settings, "fill", {"folder": "/tmp", "files": 12, "mb": 16})
    except SkillshelfError as exc:
        assert exc.code == ErrorCode.SKILL_EXECUTION_FAILED and "SIGKILL" in exc.message
        return
    assert result.output["mb"] < 128, result.output


async def test_the_run_description_names_each_limit_and_how_it_holds(limits_library: SkillLibrary) -> None:
    settings = BASE.model_copy(update={"run_memory_mb": 300, "work_dir_mb": 200, "tmp_mb": 20})
    dry = service.dry_run(LibraryReader(limits_library), settings, "limits/fill", FILL_ONE, None, None)
    ran = dry.would_run
    assert ran.work_dir_mb == 200
    assert ran.run_memory_mb == (300 if RunCgroup.available().memory else None)
    if ISOLATION.sandboxed and ISOLATION.sized_tmpfs:
        assert (ran.tmp_mb, ran.work_dir_limit) == (20, "tmpfs")
    else:
        assert (ran.tmp_mb, ran.work_dir_limit) == (None, "checked")
    unsandboxed = service.dry_run(
        LibraryReader(limits_library),
        settings.model_copy(update={"bubblewrap": False}),
        "limits/fill",
        FILL_ONE,
        None,
        None,
    ).would_run
    assert (unsandboxed.tmp_mb, unsandboxed.work_dir_limit) == (None, "checked")


@pytest.mark.parametrize(
    ("script", "problem"),
    [
        ("scripts/" + "a" * 300 + ".py", "over 255 bytes"),
        ("a" * 300, "over 255 bytes"),
        ("scripts/" + "é" * 130 + ".py", "over 255 bytes"),  # 260 bytes in UTF-8
        ("scripts/" + "/".join(["d" * 200] * 8) + "/x.py", "bytes long"),
        ("scripts/ok\x00.py", "NUL"),
    ],
    ids=["component", "bare-name", "multibyte", "whole-path", "nul"],
)
async def test_a_script_name_no_file_system_takes_is_a_validation_error(
    limits_library: SkillLibrary, tmp_path: Path, script: str, problem: str
) -> None:
    settings = Settings(roots=[tmp_path / "lib"], execution=BASE)
    async with Client(build_server(settings, limits_library)) as client:
        for dry in (False, True):
            result = await client.call_tool(
                "executeSkill", {"skillId": "limits/tools", "script": script, "dryRun": dry}
            )
            assert result.structured_content is not None and result.is_error
            error = result.structured_content["error"]
            assert error["code"] == "VALIDATION_ERROR" and problem in error["message"], error
