"""The suite's own machinery: deadlines that scale (TEST_DEADLINE_SCALE), waits that return as soon as
what they wait for happens, and real servers that fail at once, with their log, when they cannot start."""

from __future__ import annotations

import importlib.util
import os
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

import skillshelf
from tests import conftest
from tests.conftest import deadline, deadline_scale, wait_until, write
from tests.live_server import skillshelf_http

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(("raw", "scale"), [(None, 1.0), ("", 1.0), ("3", 3.0), ("0.5", 0.5), (" 2.5 ", 2.5)])
def test_the_deadline_scale_is_a_positive_factor_and_1_when_unset(raw: str | None, scale: float) -> None:
    assert deadline_scale(raw) == scale


@pytest.mark.parametrize("raw", ["abc", "0", "-2", "inf", "nan", "3s"])
def test_a_deadline_scale_that_is_no_positive_number_is_refused_saying_what_to_set(raw: str) -> None:
    with pytest.raises(ValueError, match=r"TEST_DEADLINE_SCALE=.*set it to a positive number"):
        deadline_scale(raw)


def test_pytest_refuses_to_start_with_a_bad_deadline_scale(tmp_path: Path) -> None:
    env = {**os.environ, "TEST_DEADLINE_SCALE": "fast"}
    command = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", "tests/test_cli.py"]
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=deadline(), check=False)
    assert done.returncode == pytest.ExitCode.USAGE_ERROR, done.stdout + done.stderr
    assert "TEST_DEADLINE_SCALE='fast': set it to a positive number" in done.stderr


def test_collecting_writes_the_test_modules_bytecode_even_under_pythondontwritebytecode(tmp_path: Path) -> None:
    """Collection keeps each test module's rewritten bytecode, so the next run (every worker of it) does
    not rewrite and compile all of tests/ again; a variable set for the whole machine must not cost that."""
    tests = tmp_path / "tests"
    tests.mkdir()
    (tests / "conftest.py").write_text((ROOT / "tests" / "conftest.py").read_text(encoding="utf-8"), encoding="utf-8")
    (tests / "test_tiny.py").write_text("def test_tiny() -> None:\n    assert 1 + 1 == 2\n", encoding="utf-8")
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "PYTHONPATH": str(ROOT / "src")}
    quiet = ["-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:cov", "-p", "no:fakefs"]
    command = [sys.executable, "-m", "pytest", *quiet, "--collect-only", "-q", "tests"]
    done = subprocess.run(
        command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=deadline(), check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert list((tests / "__pycache__").glob("test_tiny.*-pytest-*.pyc")), "no rewritten bytecode was kept"


def test_a_session_writes_every_skillshelf_modules_bytecode_even_under_pythondontwritebytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The workers and the `skillshelf` processes the tests start each compiled every module without current
    bytecode (those the conftest imports, those only a child imports, any edited since) at each start. The
    session's start (the controller's, before it starts the workers) now writes it for the whole package."""
    package = tmp_path / "skillshelf"
    for module in ("__init__.py", "execution/__init__.py", "execution/_child.py"):  # (_child: only children import it)
        write(package / module, "VALUE = 1\n")
    monkeypatch.setattr(skillshelf, "__file__", str(package / "__init__.py"))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)  # what PYTHONDONTWRITEBYTECODE=1 sets
    monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    conftest.pytest_sessionstart()
    modules = sorted(package.rglob("*.py"))
    without = [m for m in modules if not current_bytecode(m)]
    assert len(modules) == 3 and not without, f"no current bytecode for {without}"


def current_bytecode(module: Path) -> bool:
    """Whether `module` has bytecode that an import uses as it is (its source's size and time in the header)."""
    cached = Path(importlib.util.cache_from_source(str(module)))
    if not cached.exists():
        return False
    header, source = cached.read_bytes()[:16], module.stat()
    flags, mtime, size = (int(field) for field in struct.unpack("<III", header[4:16]))
    return flags == 0 and mtime == int(source.st_mtime) & 0xFFFFFFFF and size == source.st_size & 0xFFFFFFFF


def test_deadlines_are_multiplied_by_the_scale() -> None:
    from tests import conftest

    assert deadline(10) == 10 * conftest.DEADLINE_SCALE
    assert deadline() == conftest.LIVENESS_S * conftest.DEADLINE_SCALE


def test_a_wait_returns_when_its_condition_holds_and_fails_naming_what_never_happened() -> None:
    happened = threading.Event()
    threading.Timer(0.05, happened.set).start()
    wait_until(happened.is_set, "the timer never fired")
    with pytest.raises(AssertionError, match=r"the light never turned green \(waited"):
        wait_until(lambda: False, "the light never turned green", seconds=0.1 / deadline(1))


def test_a_server_that_exits_before_announcing_its_url_fails_at_once_with_its_log(
    sample_root: Path, tmp_path: Path
) -> None:
    """A network bind without tokens is refused: the helper says it exited, and why, from its log."""
    arguments = ["serve", "--http", "--host", "0.0.0.0", "-l", str(sample_root)]
    with (
        pytest.raises(AssertionError, match=r"exited \(1\) before announcing its URL") as failure,
        skillshelf_http(arguments, tmp_path / "server.log"),
    ):
        pass
    assert "refusing to serve 0.0.0.0 without authentication" in str(failure.value)


def test_a_server_on_port_0_is_reached_at_the_port_it_announced(sample_root: Path, tmp_path: Path) -> None:
    with skillshelf_http(["serve", "--http", "-l", str(sample_root)], tmp_path / "server.log") as server:
        health = server.health()
        assert health is not None and health["status"] == "healthy"
        assert not server.base.endswith(":0")
    assert server.process.returncode is not None  # stopped on leaving
    assert "serving" in (tmp_path / "server.log").read_text(encoding="utf-8")


def test_built_once_builds_on_the_first_ask_and_hands_the_same_folder_to_every_later_one(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    from tests.conftest import built_once

    builds: list[Path] = []

    def build(path: Path) -> None:
        builds.append(path)
        path.mkdir()
        (path / "made").write_text("once", encoding="utf-8")

    first = built_once(tmp_path_factory, "suite-support-once", build)
    assert built_once(tmp_path_factory, "suite-support-once", build) == first
    assert len(builds) == 1 and (first / "made").read_text(encoding="utf-8") == "once"
    base = tmp_path_factory.getbasetemp()
    assert first.parent == (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base)  # every worker's


def test_the_runs_temporary_folders_go_to_a_private_folder_on_the_memory_filesystem(tmp_path: Path) -> None:
    """About 13,000 fsyncs a run at ~4 ms each on disk were most of the workers' idle time; on tmpfs they
    return at once. The folder is this user's own, private, made once and found again."""
    folder = conftest.memory_temp_folder({}, memory=tmp_path)
    assert folder == tmp_path / f"skillshelf-tests-{os.getuid()}"
    assert folder.is_dir() and folder.stat().st_mode & 0o777 == 0o711  # (passable, for the `postgres` user)
    assert conftest.memory_temp_folder({"PATH": "/usr/bin"}, memory=tmp_path) == folder


def test_a_tmpdir_already_set_is_kept(tmp_path: Path) -> None:
    """The developer's TMPDIR (or, in an xdist worker, the controller's choice) stands."""
    assert conftest.memory_temp_folder({"TMPDIR": "/somewhere"}, memory=tmp_path) is None
    assert not (tmp_path / f"skillshelf-tests-{os.getuid()}").exists()


def test_no_memory_filesystem_or_no_room_leaves_tmpdir_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert conftest.memory_temp_folder({}, memory=tmp_path / "absent") is None
    monkeypatch.setattr(conftest, "MEMORY_FREE_NEEDED", 1 << 62)
    assert conftest.memory_temp_folder({}, memory=tmp_path) is None


@pytest.mark.parametrize("planted", ["shared", "link"])
def test_a_folder_someone_else_could_write_or_swap_is_not_used(tmp_path: Path, planted: str) -> None:
    """/dev/shm is shared by every user: a folder others may write in, or a link planted under the name,
    would let another user's files into the tests' temporary folders."""
    name = tmp_path / f"skillshelf-tests-{os.getuid()}"
    if planted == "shared":
        name.mkdir()
        name.chmod(0o777)
    else:
        (tmp_path / "elsewhere").mkdir(mode=0o700)
        name.symlink_to(tmp_path / "elsewhere")
    assert conftest.memory_temp_folder({}, memory=tmp_path) is None
