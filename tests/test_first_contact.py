"""First contact (issue 13): what a newcomer sees when starting the server, as real processes.

A clean checkout after serving the bundled library, one line on a terminal for stdio, Ctrl-C that
stops at once, and an HTTP start-up that binds before it says "serving" and names the real port.
"""

from __future__ import annotations

import json
import os
import re
import select
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.places import READ_ONLY_MARKER
from skillshelf.server.hosts import HostGuard, transport_security
from tests.conftest import deadline, write

PATTERNS = Path(__file__).resolve().parents[1] / "patterns"
LIVENESS_S = deadline()  # these wait for something to happen, they never measure how fast


def serve_env(home: Path) -> dict[str, str]:
    return {**os.environ, "HOME": str(home), "SKILLSHELF_CACHE_DIR": str(home / "cache"), "PYTHONUNBUFFERED": "1"}


def read_until(fd: int, pattern: str, deadline_s: float = LIVENESS_S) -> str:
    """Read `fd` until `pattern` matches (or the process closes it, or the deadline passes)."""
    seen = b""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end and not re.search(pattern, seen.decode(errors="replace")):
        ready, _, _ = select.select([fd], [], [], 0.2)
        if ready:
            try:
                chunk = os.read(fd, 4096)
            except OSError:  # a pty whose other end closed
                break
            if not chunk:
                break
            seen += chunk
    return seen.decode(errors="replace")


def test_the_bundled_library_carries_the_read_only_marker() -> None:
    assert (PATTERNS / READ_ONLY_MARKER).is_file()


def test_serving_the_checkouts_library_writes_nothing_inside_it(isolated_environment: Path) -> None:
    """As from an installed wheel: the checkout's patterns/ is not the packaged copy, yet stays clean."""
    library = SkillLibrary(LibraryConfig(roots=[PATTERNS], watch=False))
    try:
        library.sync()
        assert library.index.count() >= 20
        assert not library.index_path.is_relative_to(PATTERNS)
        assert library.state_dir == isolated_environment / ".cache" / "skillshelf"
    finally:
        library.close()


def test_a_marked_library_gets_its_index_in_the_cache_and_an_unmarked_one_keeps_it(tmp_path: Path) -> None:
    for name, marked in (("marked", True), ("plain", False)):
        root = tmp_path / name
        write(root / "db" / "x.md", "# X\n\nA short skill about one thing to do with databases.\n")
        if marked:
            write(root / READ_ONLY_MARKER, "# read-only\n")
        library = SkillLibrary(LibraryConfig(roots=[root], watch=False))
        try:
            library.sync()
            assert (root / ".skillshelf").exists() is not marked, name
            assert library.index.count() == 1
        finally:
            library.close()


def test_init_does_not_copy_the_marker(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from skillshelf.cli import cli

    result = CliRunner().invoke(cli, ["init", str(tmp_path / "mine")])
    assert result.exit_code == 0
    assert not (tmp_path / "mine" / READ_ONLY_MARKER).exists()


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_stdio_on_a_terminal_says_what_it_serves_and_stops_at_ctrl_c(
    sample_root: Path, isolated_environment: Path
) -> None:
    import pty

    controller, terminal = pty.openpty()
    command = [sys.executable, "-m", "skillshelf", "serve", "-l", str(sample_root)]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=terminal, env=serve_env(isolated_environment)
    )
    os.close(terminal)
    try:
        said = read_until(controller, r"Ctrl-C to stop")
        line = [row for row in said.splitlines() if "serving" in row]
        assert len(line) == 1, said
        assert "serving 4 skills from" in line[0] and "over stdio" in line[0] and "(default (agent) view)" in line[0]
        process.send_signal(signal.SIGINT)  # what Ctrl-C sends; stdin stays open, as in a terminal
        assert process.wait(timeout=LIVENESS_S) == 130
        assert "Traceback" not in read_until(controller, r"stopped"), "Ctrl-C is not an error"
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()
        os.close(controller)


def test_stdio_without_a_terminal_prints_no_banner(sample_root: Path, isolated_environment: Path) -> None:
    command = [sys.executable, "-m", "skillshelf", "serve", "-l", str(sample_root)]
    done = subprocess.run(
        command, check=False, input=b"", capture_output=True, env=serve_env(isolated_environment), timeout=LIVENESS_S
    )
    assert done.returncode == 0
    assert b"serving" not in done.stderr and done.stdout == b""


def test_http_on_port_0_names_the_real_port_at_info_by_default(sample_root: Path, isolated_environment: Path) -> None:
    command = [sys.executable, "-m", "skillshelf", "serve", "--http", "--port", "0", "-l", str(sample_root)]
    process = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=serve_env(isolated_environment)
    )
    try:
        assert process.stderr is not None
        said = read_until(process.stderr.fileno(), r"http://127\.0\.0\.1:\d+/mcp")
        match = re.search(r"skillshelf INFO \S+: serving .* on http://127\.0\.0\.1:(\d+)/mcp", said)
        assert match, said
        port = int(match.group(1))
        assert port != 0
        health = httpx2.get(f"http://127.0.0.1:{port}/health", timeout=LIVENESS_S)  # bound before it said so
        assert health.status_code == 200
    finally:
        process.terminate()
        process.communicate(timeout=LIVENESS_S)


def test_http_on_a_busy_port_fails_before_saying_serving(sample_root: Path, isolated_environment: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        command = [sys.executable, "-m", "skillshelf", "serve", "--http", "--port", str(port), "-l", str(sample_root)]
        done = subprocess.run(
            command, check=False, capture_output=True, env=serve_env(isolated_environment), timeout=LIVENESS_S
        )
    said = done.stderr.decode()
    assert done.returncode == 1
    assert f"cannot listen on 127.0.0.1:{port}" in said and "--port" in said
    assert "serving" not in said


@pytest.mark.anyio
async def test_a_host_not_allowed_is_told_which_flag_allows_it() -> None:
    from starlette.applications import Starlette

    app = HostGuard(Starlette(), transport_security("0.0.0.0"))
    transport = httpx2.ASGITransport(app=app, client=("192.0.2.10", 40000))
    async with httpx2.AsyncClient(transport=transport, base_url="http://testserver") as http:
        answer = await http.get("/health", headers={"Host": "192.0.2.1:8765"})
    assert answer.status_code == 421
    assert "--allowed-host 192.0.2.1" in answer.text


def large_library(root: Path, count: int = 210) -> Path:
    for number in range(count):
        write(root / f"c{number % 7}" / f"skill-{number}.md", f"# Skill {number}\n\nDoes thing number {number}.\n")
    return root


def test_a_first_index_off_a_terminal_logs_one_line_and_a_second_run_none(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from skillshelf.cli import cli

    root = large_library(tmp_path / "big")
    first = CliRunner().invoke(cli, ["categories", "-l", str(root), "--json"])
    assert first.exit_code == 0
    lines = [line for line in first.stderr.splitlines() if "indexing" in line]
    assert lines == ["skillshelf INFO skillshelf.start: indexing the library: 210 skills to parse (a first index "
                     "takes a moment)"]  # fmt: skip
    assert json.loads(first.stdout)["totalSkills"] == 210
    again = CliRunner().invoke(cli, ["categories", "-l", str(root), "--json"])
    assert again.exit_code == 0 and "indexing" not in again.stderr


@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_a_first_index_on_a_terminal_shows_live_progress(tmp_path: Path, isolated_environment: Path) -> None:
    import pty

    root = large_library(tmp_path / "big")
    controller, terminal = pty.openpty()
    command = [sys.executable, "-m", "skillshelf", "categories", "-l", str(root)]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=terminal, env=serve_env(isolated_environment)) as run:
        os.close(terminal)
        shown = read_until(controller, r"210/210 skills\r?\n")
        stdout, _ = run.communicate(timeout=LIVENESS_S)
    os.close(controller)
    assert run.returncode == 0
    assert "\rindexing the library: 210/210 skills" in shown, shown
    assert b"210 skills in 7 categories" in stdout
