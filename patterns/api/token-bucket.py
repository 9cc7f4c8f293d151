"""Token bucket rate limiting: allow bursts up to a capacity, then a steady refill rate."""

from __future__ import annotations

import itertools
import json
import math
import sys
import threading
import time
from collections.abc import Callable
from typing import Any


class TokenBucket:
    """A thread-safe token bucket.

    The bucket holds at most ``capacity`` tokens and gains ``refill_rate`` tokens per second.
    A request costing ``cost`` tokens is allowed if that many are available, and then consumes
    them. It starts full. ``clock`` must be monotonic (the default is ``time.monotonic``);
    inject a fake clock in tests.
    """

    def __init__(
        self,
        capacity: float,
        refill_rate: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if not capacity > 0 or not math.isfinite(capacity):
            raise ValueError("capacity must be a positive finite number")
        if not refill_rate > 0 or not math.isfinite(refill_rate):
            raise ValueError("refill_rate must be a positive finite number")
        self.capacity = float(capacity)
        self.refill_rate = float(refill_rate)
        self._clock = clock
        self._tokens = self.capacity
        self._updated = clock()
        self._lock = threading.Lock()

    def _refill(self) -> None:
        now = self._clock()
        elapsed = max(0.0, now - self._updated)  # never go backwards, even with a bad clock
        self._tokens = min(self.capacity, self._tokens + elapsed * self.refill_rate)
        self._updated = now

    def check_cost(self, cost: float) -> None:
        """Raise ValueError if ``cost`` is not positive or could never fit in the bucket."""
        if not cost > 0:
            raise ValueError("cost must be positive")
        if cost > self.capacity:
            raise ValueError("cost exceeds capacity: this request could never be allowed")

    def try_acquire(self, cost: float = 1.0) -> bool:
        """Take ``cost`` tokens if available and return True; otherwise take nothing."""
        self.check_cost(cost)
        with self._lock:
            self._refill()
            if self._tokens >= cost:
                self._tokens -= cost
                return True
            return False

    def retry_after(self, cost: float = 1.0) -> float:
        """Seconds until ``cost`` tokens will be available (0.0 if they are now)."""
        self.check_cost(cost)
        with self._lock:
            self._refill()
            missing = cost - self._tokens
            return 0.0 if missing <= 0 else missing / self.refill_rate

    @property
    def tokens(self) -> float:
        """Tokens currently available."""
        with self._lock:
            self._refill()
            return self._tokens


def token_bucket(
    capacity: float,
    refill_rate: float,
    request_times: list[float],
    cost: float = 1.0,
) -> dict[str, Any]:
    """Simulate a bucket over requests arriving at ``request_times`` (seconds, non-decreasing).

    The bucket starts full at the first request time. Returns
    ``{"decisions": [{"time", "allowed", "tokens_left", "retry_after"}, ...],
    "allowed": int, "rejected": int}``. Numbers are rounded to 6 decimals.
    Use it to choose ``capacity`` and ``refill_rate`` against a recorded traffic pattern.

    Raises:
        ValueError: on non-positive parameters, ``cost`` above ``capacity`` or times going
            backwards.
    """
    if any(later < earlier for earlier, later in itertools.pairwise(request_times)):
        raise ValueError("request_times must be non-decreasing")
    now = [request_times[0] if request_times else 0.0]
    bucket = TokenBucket(capacity, refill_rate, clock=lambda: now[0])
    bucket.check_cost(cost)
    decisions: list[dict[str, Any]] = []
    for moment in request_times:
        now[0] = moment
        allowed = bucket.try_acquire(cost)
        decisions.append(
            {
                "time": moment,
                "allowed": allowed,
                "tokens_left": round(bucket.tokens, 6),
                "retry_after": 0.0 if allowed else round(bucket.retry_after(cost), 6),
            }
        )
    granted = sum(1 for decision in decisions if decision["allowed"])
    return {"decisions": decisions, "allowed": granted, "rejected": len(decisions) - granted}


def run(input: dict[str, Any]) -> dict[str, Any]:
    """JSON entry point.

    Input keys: ``capacity``, ``refill_rate``, ``request_times`` (required), ``cost`` (optional).
    Returns the dict from ``token_bucket``.
    """
    return token_bucket(**input)


if __name__ == "__main__":
    try:
        result = run(json.load(sys.stdin))
    except (ValueError, TypeError) as exc:
        print(json.dumps({"error": str(exc)}))
        sys.exit(1)
    print(json.dumps(result))
