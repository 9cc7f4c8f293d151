"""bench/http_threads.py tells a server's threads apart and counts each one's CPU between two samples."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs /proc")
def test_a_named_thread_s_cpu_is_counted_under_its_own_name(tmp_path: Path) -> None:
    # A child with the naming hook first on its path: a busy thread named "busy-worker" and an idle main thread.
    from bench import http_threads

    (tmp_path / "sitecustomize.py").write_text(http_threads.NAMING_HOOK, encoding="utf-8")
    script = textwrap.dedent(
        """
        import sys, threading, time
        def spin():
            end = time.thread_time() + 0.3
            while time.thread_time() < end:
                pass
        go, spun, end = threading.Event(), threading.Event(), threading.Event()
        worker = threading.Thread(target=lambda: (go.wait(), spin(), spun.set(), end.wait()), name="busy-worker")
        worker.start()  # it stays alive after spinning: /proc lists live threads only
        print("ready", flush=True)
        sys.stdin.readline()
        go.set()
        spun.wait()
        print("done", flush=True)
        sys.stdin.readline()
        end.set()
        """
    )
    env = {"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"}
    with subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    ) as child:
        try:
            assert child.stdout is not None and child.stdin is not None
            assert child.stdout.readline().strip() == "ready"
            before = http_threads.sample(child.pid)
            child.stdin.write("\n")
            child.stdin.flush()
            assert child.stdout.readline().strip() == "done"
            totals = http_threads.difference(before, http_threads.sample(child.pid))
        finally:
            child.kill()
    assert "busy-worker" in totals, totals  # the OS thread carries the Python thread's name
    user, system = totals["busy-worker"][:2]
    assert user + system >= 20  # ticks of 10 ms: most of its 0.3 s; the main thread only waited
    assert sum(totals["python"][:2]) < user + system


def test_strace_s_summary_is_read_as_calls_a_request(tmp_path: Path) -> None:
    from bench import http_threads

    summary = tmp_path / "strace.txt"
    summary.write_text(
        "% time     seconds  usecs/call     calls    errors syscall\n"
        "------ ----------- ----------- --------- --------- ----------------\n"
        " 60.00    0.600000           3    200000     10000 futex\n"
        " 30.00    0.300000           2      2380           newfstatat\n"
        "  0.01    0.000100           1        30        30 mkdir\n"
        "------ ----------- ----------- --------- --------- ----------------\n"
        "100.00    1.000000           4    202410     10030 total\n",
        encoding="utf-8",
    )
    assert (
        http_threads.system_calls(summary, 200)
        == "1012.0 system calls a request: futex 1000.00, newfstatat 11.90, mkdir 0.15"
    )
