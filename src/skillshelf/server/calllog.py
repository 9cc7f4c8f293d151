"""The local call log: one JSON line per tool call, never arguments or contents.

A line holds the time, tool, view, token name, duration, success, error code, the sizes of the
arguments and the result in bytes, and the skill id a call was about (the `skillId`/`patternId`
argument of skill tools: an id, not text the agent wrote). It lives in the user state folder
(`$XDG_STATE_HOME/skillshelf/calls.jsonl`), rotates to `calls.jsonl.1` past `max_bytes`, and is
on unless `[call_log] enabled = false`. Several worker processes may append to one file: each line
is one `write` on a file opened for appending, and rotation is an atomic rename.

`summarise` reads it back for `skillshelf log`: calls per tool, error rates, p50/p95 durations and
the busiest skills.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from skillshelf.config.call_log import LOG_NAME, CallLogSettings, user_state_dir

logger = logging.getLogger(__name__)

SKILL_ID_ARGUMENTS = ("skillId", "patternId")
MAX_SKILL_ID = 300


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

    def to_line(self, at: float) -> str:
        record: dict[str, Any] = {
            "ts": round(at, 3),
            "tool": self.tool,
            "view": self.view,
            "caller": self.caller,
            "ms": round(self.duration_ms, 3),
            "ok": self.success,
            "code": self.error_code,
            "in": self.request_bytes,
            "out": self.response_bytes,
        }
        if self.skill:
            record["skill"] = self.skill
        if self.via:
            record["via"] = self.via
        return json.dumps(record, separators=(",", ":")) + "\n"


def skill_of(arguments: dict[str, Any]) -> str | None:
    """The skill id a call names, if any (ids only; anything else an agent passes is never logged)."""
    for key in SKILL_ID_ARGUMENTS:
        value = arguments.get(key)
        if isinstance(value, str) and 0 < len(value) <= MAX_SKILL_ID and "\n" not in value:
            return value
    return None


class CallLog:
    """Appends records; a failing disk is logged once and never fails a call."""

    def __init__(self, path: Path, max_bytes: int) -> None:
        self.path = path
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._warned = False

    @classmethod
    def from_settings(cls, settings: CallLogSettings) -> CallLog | None:
        return cls(log_path(settings), settings.max_bytes) if settings.enabled else None

    def write(self, record: CallRecord) -> None:
        line = record.to_line(time.time()).encode("utf-8")
        try:
            with self._lock:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                try:
                    if self.path.stat().st_size + len(line) > self.max_bytes:
                        self.path.replace(self.path.with_name(self.path.name + ".1"))
                except FileNotFoundError:
                    pass
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
                try:
                    os.write(fd, line)
                finally:
                    os.close(fd)
        except OSError as exc:
            if not self._warned:
                self._warned = True
                logger.warning("call log %s cannot be written (%s); calls go on unlogged", self.path, exc)


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """Every record of the log and its rotated predecessor, oldest first; broken lines skipped."""
    for candidate in (path.with_name(path.name + ".1"), path):
        try:
            lines = candidate.read_text(encoding="utf-8", errors="replace").splitlines()
        except FileNotFoundError:
            continue
        for line in lines:
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and isinstance(record.get("tool"), str):
                yield record


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


def percentile(values: list[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of unsorted values; 0.0 when there are none."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, min(len(ordered), int(-(-q * len(ordered) // 100))))
    return round(ordered[rank - 1], 3)


def summarise(records: Iterable[dict[str, Any]], path: Path, top: int = 10) -> LogSummary:
    durations: dict[str, list[float]] = defaultdict(list)
    errors: Counter[str] = Counter()
    codes: Counter[str] = Counter()
    skills: Counter[str] = Counter()
    callers: Counter[str] = Counter()
    times: list[float] = []
    for record in records:
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
    )
