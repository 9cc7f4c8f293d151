"""The call log under hostile callers and odd disks: unknown tool names are cut and counted and cannot
rotate anyone's records out, writing never waits on the disk, a clean stop loses nothing, and a FIFO at
the log's path is refused instead of hanging the server."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from mcp import Client

from skillshelf.cli import cli
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.app import build_server
from skillshelf.server.calllog import (
    MAX_PENDING,
    MAX_TOOL_NAME,
    UNKNOWN_QUOTA,
    UNKNOWN_WINDOW_S,
    CallLog,
    CallRecord,
    JsonlCallLogStore,
    read_records,
    summarise,
)
from skillshelf.settings import resolve_settings
from tests.conftest import deadline
from tests.server.team_support import make_server

DEADLINE_S = deadline(30)
ALICE_CALL = CallRecord("loadSkill", "default", "alice", 2.0, True, None, 30, 900, skill="python/slugify")


def unknown_call(name: str, caller: str | None = "mallory") -> CallRecord:
    return CallRecord(name, "default", caller, 0.1, False, "UNKNOWN", 2, 60, known=False)


@pytest.mark.anyio
async def test_calls_naming_megabyte_tools_are_cut_counted_and_rotate_no_record_out(
    sample_library: SkillLibrary, tmp_path: Path
) -> None:
    """14 calls with a 900 KB tool name used to rotate a token holder's records out of both files."""
    log = CallLog(tmp_path / "calls.jsonl", max_bytes=5 * 1024 * 1024)
    log.write(ALICE_CALL)
    server = make_server(sample_library, tmp_path / "projects", call_log=log)
    async with Client(server) as client:
        for number in range(14):
            result = await client.call_tool(f"{number}" + "x" * 900_000, {})
            assert result.is_error
        await client.call_tool("searchPatterns", {"query": "slugify"})
    log.close()
    records = list(read_records(log.path))
    assert records[0]["caller"] == "alice" and records[0]["skill"] == "python/slugify"
    assert not log.path.with_name("calls.jsonl.1").exists()
    assert log.path.stat().st_size < 14 * 1024  # 16 short lines
    unknown = [r for r in records if r.get("unknown")]
    assert len(unknown) == 14 and all(len(r["tool"]) == MAX_TOOL_NAME for r in unknown)
    summary = summarise(records, log.path)
    assert summary.unknown_tools == 14
    assert [t.tool for t in summary.tools] == ["loadSkill", "searchPatterns"]  # no row per made-up name


def test_past_a_callers_quota_unknown_tool_calls_are_counted_not_written(tmp_path: Path) -> None:
    now = [1000.0]
    log = CallLog(tmp_path / "calls.jsonl", max_bytes=1 << 20, clock=lambda: now[0])
    log.write(ALICE_CALL)
    for number in range(500):
        log.write(unknown_call(f"madeUp{number}"))
    assert log.flush(DEADLINE_S)
    lines = log.path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1 + UNKNOWN_QUOTA  # the rest are only counted, so far
    now[0] += UNKNOWN_WINDOW_S  # a new window: the next line carries the count held back
    log.write(unknown_call("late"))
    log.write(unknown_call("ghost", caller="eve"))  # another caller has a quota of its own
    for number in range(UNKNOWN_QUOTA + 5):
        log.write(unknown_call(f"again{number}", caller="eve"))
    log.close()  # writes one line for what is still held back
    summary = summarise(read_records(log.path), log.path)
    assert summary.unknown_tools == 500 + 1 + 1 + UNKNOWN_QUOTA + 5
    assert summary.calls == 1 and summary.callers == {"alice": 1}


def test_writing_a_record_never_waits_on_the_disk(tmp_path: Path) -> None:
    """A FIFO nobody reads blocks an open for writing forever: a write must still return at once."""
    fifo = tmp_path / "calls.jsonl"
    os.mkfifo(fifo)
    log = CallLog(fifo, max_bytes=1 << 20)
    returned = threading.Event()

    def write() -> None:
        log.write(ALICE_CALL)
        returned.set()

    threading.Thread(target=write, daemon=True).start()
    try:
        assert returned.wait(DEADLINE_S), "CallLog.write blocked on the disk"
        assert log.flush(DEADLINE_S)
    finally:
        if not returned.is_set():  # the old inline write is stuck opening the FIFO: let it through
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))


def test_a_record_is_formatted_on_the_writer_thread_into_the_same_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`write` only queues: the JSON is made on the writer thread, off the event loop (issue 36), and the lines
    are byte for byte what they were."""
    formatted_on: list[str] = []
    to_line = CallRecord.to_line

    def spied(record: CallRecord, at: float, suppressed: int = 0) -> str:
        formatted_on.append(threading.current_thread().name)
        return to_line(record, at, suppressed)

    monkeypatch.setattr(CallRecord, "to_line", spied)
    path = tmp_path / "calls.jsonl"
    log = CallLog(path, max_bytes=1 << 20, clock=lambda: 1700000000.12345)
    odd = CallRecord("searchPatterns", "default", "bad\x00name\ud800", 1.23456, False, "X" * 70, 5, 0, via="run")
    for record in (ALICE_CALL, odd, unknown_call("no such tool")):
        log.write(record)
    assert formatted_on == []  # nothing formatted by the caller
    log.close()
    assert set(formatted_on) == {"skillshelf-call-log"}
    assert path.read_bytes() == (
        b'{"ts":1700000000.123,"tool":"loadSkill","view":"default","caller":"alice","ms":2.0,"ok":true,"code":null,'
        b'"in":30,"out":900,"skill":"python/slugify"}\n'
        b'{"ts":1700000000.123,"tool":"searchPatterns","view":"default","caller":"bad\\ufffdname\\ufffd","ms":1.235,'
        b'"ok":false,"code":"' + b"X" * 64 + b'","in":5,"out":0,"via":"run"}\n'
        b'{"ts":1700000000.123,"tool":"no such tool","view":"default","caller":"mallory","ms":0.1,"ok":false,'
        b'"code":"UNKNOWN","in":2,"out":60,"unknown":true}\n'
    )


def test_a_batch_makes_the_log_folder_only_when_the_open_finds_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each batch used to make the folder first (a mkdir and a stat): now only the open that finds no folder
    does, the first batch's and one after the folder was deleted (issue 36). Every line still lands."""
    made: list[str] = []
    mkdir = os.mkdir

    def counted(path: Any, *args: Any, **kwargs: Any) -> None:
        made.append(str(path))
        mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", counted)
    folder = tmp_path / "state" / "logs"
    store = JsonlCallLogStore(folder / "calls.jsonl", max_bytes=1 << 20)
    store.append([b"one\n"])
    assert str(folder) in made and folder.is_dir()
    made.clear()
    store.append([b"two\n"])
    store.append([b"three\n"])
    assert made == []
    assert (folder / "calls.jsonl").read_bytes() == b"one\ntwo\nthree\n"
    shutil.rmtree(tmp_path / "state")
    store.append([b"four\n"])
    assert (folder / "calls.jsonl").read_bytes() == b"four\n"


def test_a_fifo_at_the_log_path_is_refused_with_one_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    fifo = tmp_path / "calls.jsonl"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # even with a reader, a FIFO is not a log file
    try:
        log = CallLog(fifo, max_bytes=1 << 20)
        with caplog.at_level("WARNING", logger="skillshelf.server.calllog"):
            for _ in range(3):
                log.write(ALICE_CALL)
                assert log.flush(DEADLINE_S)
            log.close()
        assert os.read(reader, 1) == b""  # nothing was written into it
    finally:
        os.close(reader)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "is a FIFO, not a regular file" in warnings[0]
    assert "[call_log] path" in warnings[0]
    assert log.health() == {
        "state": "failing",
        "dropped": 3,
        "lastError": "the log's path is a FIFO, not a regular file",
    }


def test_closing_writes_every_record_queued(tmp_path: Path) -> None:
    log = CallLog(tmp_path / "deep" / "state" / "calls.jsonl", max_bytes=1 << 20)
    for number in range(2000):
        log.write(CallRecord("searchPatterns", "default", f"caller{number % 7}", 1.0, True, None, 10, 10))
    log.close()
    assert len(list(read_records(log.path))) == 2000


def test_a_busy_server_writes_its_records_in_batches_and_a_lone_one_still_reaches_the_disk(tmp_path: Path) -> None:
    """The writer lingers after a first record so the next ones share its write (a write per call woke the
    thread and took the GIL from the calls on every call); a lone record is written without any flush."""
    appends: list[int] = []

    class Counting(CallLog):
        def _append(self, lines: list[bytes]) -> None:
            appends.append(len(lines))
            super()._append(lines)

    log = Counting(tmp_path / "calls.jsonl", max_bytes=1 << 20)
    log.linger_s = DEADLINE_S  # longer than the calls below take, on any machine
    for number in range(20):
        log.write(CallRecord("searchPatterns", "default", f"caller{number % 7}", 1.0, True, None, 10, 10))
        time.sleep(0.005)  # calls a few milliseconds apart: each woke the thread for a write of its own
    assert log.flush(DEADLINE_S)  # a flush does not wait for the linger
    assert appends == [20]
    log.linger_s = 0.05
    log.write(ALICE_CALL)  # alone, and nobody flushes: it is on disk once the linger is over
    waited = time.monotonic() + DEADLINE_S
    while len(list(read_records(log.path))) < 21 and time.monotonic() < waited:
        time.sleep(0.01)
    assert len(list(read_records(log.path))) == 21
    log.close()


def test_a_disk_that_hangs_costs_records_not_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    released = threading.Event()

    class HangingDisk(CallLog):  # the disk stands still until released
        def _append(self, lines: list[bytes]) -> None:
            released.wait(DEADLINE_S)
            super()._append(lines)

    log = HangingDisk(tmp_path / "calls.jsonl", max_bytes=1 << 30)
    total = 2 * MAX_PENDING + 500  # the thread holds at most one full queue, the queue another
    try:
        with caplog.at_level("WARNING", logger="skillshelf.server.calllog"):
            for _ in range(total):
                log.write(ALICE_CALL)
        assert log.dropped >= 500
    finally:
        released.set()
        log.close()
    assert len(list(read_records(log.path))) + log.dropped == total
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1 and "records behind; new records are dropped" in warnings[0]


# -- in real serve processes ---------------------------------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0", "id": 1, "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
}  # fmt: skip


class StdioServer:
    """A real `skillshelf serve` over pipes; answers are read with deadlines, so a hung server fails."""

    def __init__(self, library: Path, config: Path, stderr: Path) -> None:
        command = [sys.executable, "-m", "skillshelf", "--config", str(config), "serve", "--no-watch"]
        with stderr.open("wb") as sink:
            self.process = subprocess.Popen(
                [*command, "-l", str(library)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=sink
            )
        self._pending = bytearray()
        self._answers: dict[Any, dict[str, Any]] = {}

    def send(self, *messages: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write(b"".join((json.dumps(m) + "\n").encode() for m in messages))
        self.process.stdin.flush()

    def answer(self, wanted: int) -> dict[str, Any]:
        """The answer with id `wanted` (read with os.read: select cannot see a Python buffer)."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        end = time.monotonic() + DEADLINE_S
        while True:
            while b"\n" in self._pending:
                raw, _, rest = bytes(self._pending).partition(b"\n")
                self._pending[:] = rest
                message = json.loads(raw)
                self._answers[message.get("id")] = message
            if wanted in self._answers:
                return self._answers.pop(wanted)
            left = end - time.monotonic()
            assert left > 0 and select.select([fd], [], [], left)[0], f"no answer to {wanted}: the server hangs"
            chunk = os.read(fd, 1 << 20)
            assert chunk, "the server closed stdout"
            self._pending += chunk

    def finish(self) -> int:
        """Close stdin as a client does when it is done; the exit status."""
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.close()
        try:
            return self.process.wait(timeout=DEADLINE_S)
        finally:
            self.process.stdout.close()


def call(number: int) -> dict[str, Any]:
    params = {"name": "searchPatterns", "arguments": {"query": "slugify"}}
    return {"jsonrpc": "2.0", "id": number, "method": "tools/call", "params": params}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def test_a_fifo_at_the_call_log_path_does_not_hang_the_server(sample_root: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "calls.fifo"
    os.mkfifo(fifo)
    config = tmp_path / "config.toml"
    config.write_text(f'[call_log]\npath = "{fifo}"\n', encoding="utf-8")
    server = StdioServer(sample_root, config, tmp_path / "stderr.log")
    try:
        server.send(INITIALIZE, INITIALIZED, call(2), call(3))
        server.answer(1)
        assert server.answer(2)["result"]["structuredContent"]["success"]
        assert server.answer(3)["result"]["structuredContent"]["success"]
        assert server.finish() == 0
    finally:
        if server.process.poll() is None:
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))  # release an old server stuck opening it
            server.process.kill()
            server.finish()
    assert (tmp_path / "stderr.log").read_text(encoding="utf-8").count("is a FIFO, not a regular file") == 1


def test_a_clean_stop_of_stdio_loses_no_record(sample_root: Path, tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    log = tmp_path / "state" / "calls.jsonl"
    config.write_text(f'[call_log]\npath = "{log}"\n', encoding="utf-8")
    server = StdioServer(sample_root, config, tmp_path / "stderr.log")
    server.send(INITIALIZE, INITIALIZED)
    server.answer(1)
    server.send(*(call(number) for number in range(2, 52)))
    for number in range(2, 52):
        server.answer(number)
    assert server.finish() == 0  # the client is done: the server exits, writing what it queued
    assert len(list(read_records(log))) == 50


def test_log_refuses_to_read_a_fifo_and_says_so(tmp_path: Path) -> None:
    fifo = tmp_path / "calls.jsonl"
    os.mkfifo(fifo)
    command = [sys.executable, "-m", "skillshelf", "log", "--path", str(fifo)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=DEADLINE_S, check=False)
    assert done.returncode != 0
    assert "is a FIFO, not a call log file" in done.stderr


def test_log_counts_calls_to_unknown_tools_apart(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    lines = [
        {"ts": 1.0, "tool": "loadSkill", "ms": 3.0, "ok": True},
        {"ts": 2.0, "tool": "noSuchTool", "ms": 0.1, "ok": False, "unknown": True, "suppressed": 9},
        {"ts": 3.0, "tool": "x" * 5000, "ms": 0.1, "ok": False},  # an older log: judged by the name
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    text = CliRunner().invoke(cli, ["log", "--path", str(log)])
    assert text.exit_code == 0, text.output
    assert text.output.startswith("1 call, 0 errors (")
    assert "11 calls to tools the server does not know" in text.output
    summary = json.loads(CliRunner().invoke(cli, ["log", "--path", str(log), "--json"]).output)
    assert summary["unknown_tools"] == 11 and [t["tool"] for t in summary["tools"]] == ["loadSkill"]


# -- a store that fails: the writer goes on, /health and the log say so ----------------------------------


class PickyStore(JsonlCallLogStore):
    """The file, refusing any line from the caller `refused`: a store that cannot hold one record."""

    def append(self, lines: list[bytes]) -> None:
        if any(b'"caller":"refused"' in line for line in lines):
            raise ValueError("this store cannot hold that line")
        super().append(lines)


def test_a_record_the_store_refuses_costs_that_record_alone_and_the_writer_goes_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "calls.jsonl"
    log = CallLog(path, max_bytes=1 << 20, store=PickyStore(path, 1 << 20))
    log.linger_s = DEADLINE_S  # the three records share one batch (flush writes it at once)
    refused = CallRecord("loadSkill", "default", "refused", 1.0, True, None, 1, 1)
    with caplog.at_level("ERROR", logger="skillshelf.server.calllog"):
        for record in (ALICE_CALL, refused, ALICE_CALL):
            log.write(record)
        assert log.flush(DEADLINE_S)
        log.write(ALICE_CALL)
        log.close()
    assert [r["caller"] for r in read_records(path)] == ["alice"] * 3
    assert log.health() == {"state": "ok", "dropped": 1, "lastError": "ValueError: this store cannot hold that line"}
    errors = [r.getMessage() for r in caplog.records]
    assert errors == [
        f"call log {path} could not store 1 call record(s), dropped: ValueError: this store cannot hold that line"
    ]


class BrokenStore(JsonlCallLogStore):
    """The file, failing as `fault` says: "fire" fails every line, "fatal" ends the thread handing it lines."""

    fault: str | None = "fire"

    def append(self, lines: list[bytes]) -> None:
        if self.fault == "fatal":
            raise SystemExit("the writer thread is gone")
        if self.fault == "fire":
            raise RuntimeError("the disk is on fire")
        super().append(lines)


@pytest.mark.anyio
async def test_health_shows_a_call_log_writer_that_fails_or_died_and_a_new_one_starts(
    sample_root: Path, tmp_path: Path
) -> None:
    import httpx2

    path = tmp_path / "calls.jsonl"
    store = BrokenStore(path, 1 << 20)
    log = CallLog(path, max_bytes=1 << 20, store=store)
    settings = resolve_settings([sample_root], env={"SKILLSHELF_STATE_DIR": str(tmp_path / "state")})
    library = SkillLibrary(settings.library_config())

    async def call_log_health() -> dict[str, Any]:
        app = build_server(settings, library, call_log=log).http_app()
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://127.0.0.1") as http:
            found: dict[str, Any] = (await http.get("/health")).json()["callLog"]
        return found

    try:
        assert await call_log_health() == {"state": "ok", "dropped": 0, "lastError": None}
        log.write(ALICE_CALL)
        assert log.flush(DEADLINE_S)
        assert await call_log_health() == {
            "state": "failing",
            "dropped": 1,
            "lastError": "RuntimeError: the disk is on fire",
        }
        store.fault = "fatal"
        log.write(ALICE_CALL)
        assert log.flush(DEADLINE_S)
        assert (await call_log_health())["state"] == "stopped"
        store.fault = None  # mended: the next record starts a writer, which writes it
        log.write(ALICE_CALL)
        assert log.flush(DEADLINE_S)
        assert await call_log_health() == {
            "state": "ok",
            "dropped": 2,
            "lastError": "SystemExit: the writer thread is gone",
        }
        assert [r["caller"] for r in read_records(path)] == ["alice"]
    finally:
        log.close()
        library.close()
