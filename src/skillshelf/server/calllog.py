"""The local call log: one JSON line per tool call, never arguments or contents.

A line holds the time, tool, view, token name, duration, success, error code, the sizes of the
arguments and the result in bytes, and the skill id a call was about (the `skillId`/`patternId`
argument of skill tools: an id, not text the agent wrote). It lives in the user state folder
(`$XDG_STATE_HOME/skillshelf/calls.jsonl`), rotates to `calls.jsonl.1` past `max_bytes`, and is
on unless `[call_log] enabled = false`. Several worker processes may append to one file: each batch
of lines is one `write` on a file opened for appending, and rotation is an atomic rename.

Writing never waits on the disk: `CallLog.write` queues the record and a writer thread formats it
and appends the line (the JSON, mkdir, stat, rename and write stay off the event loop). `close` (also
run at interpreter exit) writes everything queued first, so a clean stop loses no record.

A call to a tool the server does not know is written with its name cut to `MAX_TOOL_NAME`
characters and `"unknown": true`, and per caller only `UNKNOWN_QUOTA` of them an hour line by line;
the rest are counted into the next such line (`"suppressed": N`). So however many calls a client
makes with made-up (or megabyte-long) names, they add a few kilobytes an hour and cannot rotate
anyone's earlier records out of the log. A FIFO, socket or device at the log's path is refused
with one warning, never opened for a blocking write.

Where the lines go is a `CallLogStore`: `JsonlCallLogStore`, the file above (the default), or the
shared PostgreSQL database when `database_url` is set (state/postgres/calllog.py); `open_call_log` takes
the one `open_stores` (state/) gives for `database_url`.
A store that cannot take lines for now (the database restarting) raises `RetryLater`: the writer
keeps them queued and tries again, so a restart costs no record unless the queue overflows (counted
in `dropped`, and logged) or the server stops first (logged with the count). No record can stop the
writer: its strings are made storable first (NUL and lone surrogates become U+FFFD), a batch the store
fails on otherwise is offered again line by line so only a line it still refuses is lost (dropped, and
logged as an error), and `health` (in /health) says whether the writer runs and what it lost.

`summarise` reads it back for `skillshelf log`: calls per tool, error rates, p50/p95 durations, the
busiest skills, and how many calls named unknown tools.
"""

from __future__ import annotations

import atexit
import json
import logging
import re
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from skillshelf.config.call_log import LOG_NAME, CallLogSettings, user_state_dir
from skillshelf.errors import SkillshelfError
from skillshelf.state import Stores, open_stores
from skillshelf.state.calllog import CallLogStore, RetryLater, StoreFailed
from skillshelf.state.files.calllog import JsonlCallLogStore, read_records

__all__ = [
    "CallLog",
    "CallLogStore",
    "CallRecord",
    "JsonlCallLogStore",
    "RetryLater",
    "StoreFailed",
    "open_call_log",
    "read_records",
    "summarise",
]

if TYPE_CHECKING:
    from skillshelf.settings import Settings

logger = logging.getLogger(__name__)

MAX_TOOL_NAME = 128  # MCP's limit for a tool name; an unknown name is cut to it
MAX_CODE = 64
TOOL_NAME = re.compile(r"^[A-Za-z0-9_./-]{1,128}$")  # every name a tool may have (SEP-986)
UNKNOWN_QUOTA = 60  # lines per caller and window for calls to unknown tools
UNKNOWN_WINDOW_S = 3600.0
MAX_PENDING = 10_000  # lines queued for the writer thread; past it (a disk that hangs) records are dropped
CLOSE_TIMEOUT_S = 30.0
LINGER_S = 0.05  # a queued record waits up to this long for the next ones, to share one write with them
WRITE_BATCH = 256  # ... or until this many are queued
RETRY_S = 1.0  # between attempts to hand queued lines to a store that said RetryLater
MAX_ERROR = 300  # characters of a store's error kept for /health
# What neither store can hold in a string: NUL (PostgreSQL's text and jsonb refuse it) and a lone surrogate
# (no UTF-8 for it; jsonb refuses its escape). A record's strings come from callers (a tool name, a token's
# name): these become U+FFFD, so one odd call is logged, not refused, and never fails the lines around it.
UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")
LINE_JSON = json.JSONEncoder(separators=(",", ":"))  # one encoder for every line (json.dumps makes one a call)


def log_path(settings: CallLogSettings) -> Path:
    return (settings.path or user_state_dir() / LOG_NAME).expanduser()


@dataclass(frozen=True)
class CallRecord:
    tool: str
    view: str
    caller: str | None
    duration_ms: float
    success: bool
    error_code: str | None
    request_bytes: int
    response_bytes: int
    skill: str | None = None
    via: str | None = None  # the meta-tool or composite an inner call was made by
    known: bool = True  # the server has a tool of this name (False: the name is cut and counted)

    @property
    def unknown(self) -> bool:
        return not self.known or not TOOL_NAME.match(self.tool)

    def to_line(self, at: float, suppressed: int = 0) -> str:
        unknown = self.unknown
        record: dict[str, Any] = {
            "ts": round(at, 3),
            "tool": self.tool[:MAX_TOOL_NAME] if unknown else self.tool,
            "view": self.view,
            "caller": self.caller,
            "ms": round(self.duration_ms, 3),
            "ok": self.success,
            "code": self.error_code[:MAX_CODE] if self.error_code else self.error_code,
            "in": self.request_bytes,
            "out": self.response_bytes,
        }
        if self.skill:
            record["skill"] = self.skill
        if self.via:
            record["via"] = self.via
        if unknown:
            record["unknown"] = True
        if suppressed:
            record["suppressed"] = suppressed
        if UNSTORABLE.search("".join(value for value in record.values() if isinstance(value, str))):
            record = {key: storable(value) if isinstance(value, str) else value for key, value in record.items()}
        return LINE_JSON.encode(record) + "\n"


def storable(text: str) -> str:
    """`text` with what no store can hold (NUL, a lone surrogate) replaced by U+FFFD."""
    return UNSTORABLE.sub("\ufffd", text)


@dataclass
class _Allowance:
    """One caller's calls to unknown tools in the current window."""

    opened: float
    written: int = 0
    suppressed: int = 0
    last: CallRecord | None = None  # the latest call not written, for the line `close` writes


@dataclass
class UnknownQuota:
    """Which calls to unknown tools get a line: per caller, `quota` per `window_s` seconds; a line
    written after some were held back says how many (`suppressed`), so the count stays exact."""

    quota: int = UNKNOWN_QUOTA
    window_s: float = UNKNOWN_WINDOW_S
    _callers: dict[str | None, _Allowance] = field(default_factory=dict)

    def admit(self, record: CallRecord, now: float) -> int | None:
        """The number of earlier calls this line stands for too, or None: count it, write nothing."""
        allowance = self._callers.get(record.caller)
        if allowance is None or now - allowance.opened >= self.window_s:
            held = allowance.suppressed if allowance is not None else 0
            allowance = self._callers[record.caller] = _Allowance(opened=now, suppressed=held)
        if allowance.written >= self.quota:
            allowance.suppressed += 1
            allowance.last = record
            return None
        allowance.written += 1
        held, allowance.suppressed, allowance.last = allowance.suppressed, 0, None
        return held

    def remainder(self) -> list[tuple[CallRecord, int]]:
        """For each caller with calls held back: the latest, standing for the others too."""
        left = [(a.last, a.suppressed - 1) for a in self._callers.values() if a.last is not None and a.suppressed]
        for allowance in self._callers.values():
            allowance.suppressed, allowance.last = 0, None
        return left


class CallLog:
    """Appends records from a writer thread; a failing disk is logged once and never fails a call.

    `write` queues the record (no formatting, no disk access); `flush` waits until what is queued is written;
    `close` flushes and stops the thread, and runs at interpreter exit too. The log may be written
    again after `close` (a new thread starts).

    The thread lingers up to LINGER_S after the first queued record, so a busy server writes a batch a
    few times a second instead of waking the thread (and taking the GIL from the calls) for each call.
    """

    def __init__(
        self,
        path: Path,
        max_bytes: int,
        clock: Callable[[], float] = time.time,
        store: CallLogStore | None = None,
    ) -> None:
        self.path = path  # the file of the default store
        self.max_bytes = max_bytes
        self.clock = clock
        self.store: CallLogStore = store or JsonlCallLogStore(path, max_bytes)
        self.dropped = 0  # records lost: the writer fell MAX_PENDING lines behind, or the store refused them
        self._state = "ok"  # of the last hand-over to the store: "ok", "retrying" (kept) or "failing" (lost)
        self._last_error: str | None = None
        self._unknown = UnknownQuota()
        self._pending: deque[_Queued] = deque()
        self._writing = False  # the thread holds lines taken from the queue but not yet written
        self._stopping = False
        self._hurry = 0  # flushes waiting: the thread writes at once, without lingering
        self.linger_s = LINGER_S
        self._thread: threading.Thread | None = None
        self._changed = threading.Condition()
        self._warned: set[str] = set()

    @classmethod
    def from_settings(cls, settings: CallLogSettings) -> CallLog | None:
        """The file log of these settings (None: the log is off); `open_call_log` also picks the store."""
        return cls(log_path(settings), settings.max_bytes) if settings.enabled else None

    def write(self, record: CallRecord) -> None:
        now = self.clock()
        with self._changed:
            suppressed = self._unknown.admit(record, now) if record.unknown else 0
            if suppressed is not None:
                self._enqueue((record, now, suppressed))

    def flush(self, timeout: float = CLOSE_TIMEOUT_S) -> bool:
        """Wait until every queued line is written (False: still writing after `timeout`)."""
        with self._changed:
            self._hurry += 1
            self._changed.notify_all()
            try:
                return self._changed.wait_for(lambda: not self._pending and not self._writing, timeout)
            finally:
                self._hurry -= 1

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """Write what is queued (and the count of unknown-tool calls held back), then stop the thread."""
        with self._changed:
            now = self.clock()
            for record, suppressed in self._unknown.remainder():
                self._enqueue((record, now, suppressed))
            thread, self._stopping = self._thread, True
            self._changed.notify_all()
        if thread is not None:
            thread.join(timeout)
            if thread.is_alive():
                self._warn("slow", "call log %s did not take the last records within %gs", timeout)
        with self._changed:
            self._thread, self._stopping = None, False
        atexit.unregister(self.close)

    def _enqueue(self, line: _Queued) -> None:  # holding self._changed
        if len(self._pending) >= MAX_PENDING:
            self.dropped += 1
            self._warn("behind", "call log %s: the disk is %d records behind; new records are dropped", MAX_PENDING)
            return
        self._pending.append(line)
        if self._thread is None or not (self._thread.is_alive() or self._stopping):  # none yet, or it died
            self._thread = threading.Thread(target=self._run, name="skillshelf-call-log", daemon=True)
            self._thread.start()
            atexit.register(self.close)
        if len(self._pending) in (1, WRITE_BATCH):  # the thread waits for the first, lingers for a batch
            self._changed.notify_all()

    def _run(self) -> None:
        while True:
            with self._changed:
                self._changed.wait_for(lambda: bool(self._pending) or self._stopping)
                self._changed.wait_for(self._write_now, self.linger_s)
                if not self._pending:
                    return
                batch = list(self._pending)
                self._pending.clear()
                self._writing = True
            try:
                self._deliver([_formatted(item) for item in batch])
            except BaseException as exc:  # past `_deliver` only what ends a thread: it ends, and says so
                self._lose(len(batch), exc)
                logger.error("call log %s: its writer stopped; the next record starts another", self.store.where)
                return
            finally:
                with self._changed:
                    self._writing = False
                    self._changed.notify_all()

    def health(self) -> dict[str, Any]:
        """For /health: `state` "ok" (the last record was stored), "retrying" (the store cannot take records now:
        they are kept), "failing" (the last record was lost) or "stopped" (the writer thread is gone; the next
        record starts another); `dropped`, the records lost since the start (a refused one, one past a full
        queue); `lastError`, the store's latest complaint (None: never)."""
        with self._changed:
            thread = self._thread
            dead = thread is not None and not thread.is_alive() and not self._stopping
            state = "stopped" if dead else self._state
            return {"state": state, "dropped": self.dropped, "lastError": self._last_error}

    def _deliver(self, batch: list[bytes]) -> None:
        """On the writer thread: hand `batch` to the store. A store that fails on something else than its own
        RetryLater or StoreFailed is offered the lines one by one, so a line it cannot hold costs that line
        alone (dropped, logged), never the batch around it nor the thread."""
        try:
            self._append(batch)
        except (RetryLater, StoreFailed) as exc:
            self._not_taken(batch, exc)
        except Exception:
            self._deliver_one_by_one(batch)
        else:
            self._delivered()

    def _deliver_one_by_one(self, batch: list[bytes]) -> None:
        for number, line in enumerate(batch):
            try:
                self._append([line])
            except (RetryLater, StoreFailed) as exc:
                self._not_taken(batch[number:], exc)
                return
            except Exception as exc:
                self._lose(1, exc)
            else:
                self._delivered()

    def _not_taken(self, lines: list[bytes], why: RetryLater | StoreFailed) -> None:
        if isinstance(why, RetryLater):
            self._keep_for_later(lines, why)
        else:
            self._lose(len(lines), why, logged=True)

    def _delivered(self) -> None:
        with self._changed:
            self._state = "ok"

    def _lose(self, count: int, why: BaseException, logged: bool = False) -> None:
        """`count` records the store refused: counted, kept in /health, and logged as an error (once while the
        store keeps failing the same way; `logged`: the store has said why itself)."""
        message = describe_error(why)
        with self._changed:
            repeated = self._state == "failing" and self._last_error == message
            self.dropped += count
            self._state, self._last_error = "failing", message
        if not (logged or repeated):
            logger.error("call log %s could not store %d call record(s), dropped: %s", self.store.where, count, message)

    def _write_now(self) -> bool:  # holding self._changed
        return self._stopping or self._hurry > 0 or len(self._pending) >= WRITE_BATCH

    def _append(self, lines: list[bytes]) -> None:
        """On the writer thread: hand `lines` to the store."""
        self.store.append(lines)

    def _keep_for_later(self, batch: list[bytes], why: RetryLater) -> None:
        """A store that cannot take lines now: put them back first in the queue and wait a moment; when
        stopping, or past MAX_PENDING, what cannot wait is counted in `dropped` and logged."""
        with self._changed:
            if self._stopping:
                self.dropped += len(batch) + len(self._pending)
                logger.error(
                    "call log %s: %d call records were not written (%s): the server stopped before it came back",
                    self.store.where,
                    len(batch) + len(self._pending),
                    why,
                )
                self._pending.clear()
                return
            self._warn("retry", "call log %s cannot take records now (%s); they are kept and retried", why)
            self._state, self._last_error = "retrying", describe_error(why)
            self._pending.extendleft(reversed(batch))
            while len(self._pending) > MAX_PENDING:
                self._pending.pop()
                self.dropped += 1
            self._changed.wait_for(lambda: self._stopping, RETRY_S)

    def _warn(self, kind: str, message: str, *args: object) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            logger.warning(message, self.store.where, *args)


# What waits for the writer: a record with its time and the count of unknown-tool calls it stands for, which
# the writer thread formats (off the event loop), or a line formatted already (kept for a store to retry).
_Queued = tuple[CallRecord, float, int] | bytes


def _formatted(item: _Queued) -> bytes:
    if isinstance(item, bytes):
        return item
    record, at, suppressed = item
    return record.to_line(at, suppressed).encode("utf-8")


def describe_error(exc: BaseException) -> str:
    """A store's error for the log and /health: its message's first line, capped (never a record's text)."""
    own = isinstance(exc, SkillshelfError | RetryLater | StoreFailed)  # their message says what happened
    text = exc.message if isinstance(exc, SkillshelfError) else str(exc)
    first = (text.strip().splitlines() or [""])[0]
    shown = first if own or not first else f"{type(exc).__name__}: {first}"
    return (shown or type(exc).__name__)[:MAX_ERROR]


def open_call_log(settings: Settings, stores: Stores | None = None) -> CallLog | None:
    """The call log `settings` choose (None: off), in `stores` (the application's: server/app.py), else the
    ones `database_url` names (`open_stores`)."""
    if not settings.call_log.enabled:
        return None
    path, max_bytes = log_path(settings.call_log), settings.call_log.max_bytes
    chosen = stores if stores is not None else open_stores(settings.database_url)
    return CallLog(path, max_bytes, store=chosen.call_log(path, max_bytes))


def call_log_store(settings: Settings, path: Path | None = None) -> CallLogStore:
    """Where `skillshelf log` reads: the file `path` when given, else the store `database_url` names."""
    if path is not None:
        return JsonlCallLogStore(path, settings.call_log.max_bytes)
    return open_stores(settings.database_url).call_log(log_path(settings.call_log), settings.call_log.max_bytes)


def is_unknown_tool(record: dict[str, Any]) -> bool:
    """A call to a tool the server did not know (older logs did not mark them: judged by the name)."""
    return bool(record.get("unknown")) or not TOOL_NAME.match(str(record["tool"]))


class ToolSummary(BaseModel):
    tool: str
    calls: int
    errors: int
    error_rate: float
    p50_ms: float
    p95_ms: float


class LogSummary(BaseModel):
    path: str
    calls: int
    errors: int
    since: float | None
    until: float | None
    tools: list[ToolSummary]
    error_codes: dict[str, int]
    busiest_skills: list[tuple[str, int]]
    callers: dict[str, int]
    unknown_tools: int = 0  # calls naming tools the server does not know (not in `tools`)


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of unsorted values; 0.0 when there are none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return round(ordered[rank - 1], 3)


def summarise(records: Iterable[dict[str, Any]], path: Path | str, top: int = 10) -> LogSummary:
    durations: dict[str, list[float]] = defaultdict(list)
    errors: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    skills: Counter[str] = Counter()
    callers: Counter[str] = Counter()
    times: list[float] = []
    unknown = 0
    for record in records:
        if is_unknown_tool(record):
            held = record.get("suppressed")
            unknown += 1 + (held if isinstance(held, int) and held > 0 else 0)
            continue
        tool = record["tool"]
        durations[tool].append(float(record.get("ms") or 0.0))
        if not record.get("ok", False):
            errors[tool] += 1
            codes[str(record.get("code") or "UNKNOWN")] += 1
        if isinstance(record.get("skill"), str):
            skills[record["skill"]] += 1
        callers[str(record.get("caller") or "anonymous")] += 1
        if isinstance(record.get("ts"), int | float):
            times.append(float(record["ts"]))
    tools = [
        ToolSummary(
            tool=tool,
            calls=len(values),
            errors=errors[tool],
            error_rate=round(errors[tool] / len(values), 4),
            p50_ms=percentile(values, 50),
            p95_ms=percentile(values, 95),
        )
        for tool, values in durations.items()
    ]
    tools.sort(key=lambda t: (-t.calls, t.tool))
    return LogSummary(
        path=str(path),
        calls=sum(t.calls for t in tools),
        errors=sum(errors.values()),
        since=min(times) if times else None,
        until=max(times) if times else None,
        tools=tools,
        error_codes=dict(codes.most_common()),
        busiest_skills=skills.most_common(top),
        callers=dict(callers.most_common()),
        unknown_tools=unknown,
    )
