"""Retry with capped exponential backoff and jitter.

Two entry points:

- ``retry_backoff`` computes the delay schedule (pure and deterministic when ``seed`` is given).
- ``retry_call`` runs a callable, sleeping between failed attempts according to that schedule.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")

JITTER_MODES = ("none", "full", "equal")
MAX_ATTEMPTS_LIMIT = 1000


def retry_backoff(
    max_attempts: int = 5,
    base_delay: float = 0.1,
    max_delay: float = 30.0,
    multiplier: float = 2.0,
    jitter: str = "full",
    seed: int | None = None,
) -> list[float]:
    """Return the sleeps (in seconds) to take between ``max_attempts`` attempts.

    The n-th retry waits ``min(max_delay, base_delay * multiplier**n)``, randomised by ``jitter``:

    - ``"none"``: the capped exponential value itself.
    - ``"full"``: uniform in ``[0, cap]`` (best at spreading out many clients).
    - ``"equal"``: ``cap / 2`` plus uniform in ``[0, cap / 2]`` (never retries immediately).

    There is one delay fewer than attempts: no sleep after the final failure.
    Pass ``seed`` only for reproducible output (tests, docs); in production leave it ``None``
    so that clients do not all draw the same "random" delays.

    Raises:
        ValueError: if an argument is out of range or ``jitter`` is unknown.
    """
    if isinstance(max_attempts, bool) or not isinstance(max_attempts, int):
        raise ValueError("max_attempts must be an integer")
    if not 1 <= max_attempts <= MAX_ATTEMPTS_LIMIT:
        raise ValueError(f"max_attempts must be between 1 and {MAX_ATTEMPTS_LIMIT}")
    if base_delay < 0 or max_delay < 0:
        raise ValueError("base_delay and max_delay must be non-negative")
    if multiplier < 1:
        raise ValueError("multiplier must be at least 1")
    if jitter not in JITTER_MODES:
        raise ValueError(f"jitter must be one of {', '.join(JITTER_MODES)}")

    rng = random.Random(seed)
    delays: list[float] = []
    step = min(float(base_delay), float(max_delay))
    for _ in range(max_attempts - 1):
        cap = step
        if jitter == "none":
            delay = cap
        elif jitter == "full":
            delay = rng.uniform(0.0, cap)
        else:
            delay = cap / 2 + rng.uniform(0.0, cap / 2)
        delays.append(round(delay, 6))
        # Grow iteratively and clamp, so large attempt counts never overflow a float.
        step = min(step * multiplier, float(max_delay))
    return delays


def retry_call(
    func: Callable[[], T],
    *,
    max_attempts: int = 5,
    base_delay: float = 0.1,
    max_delay: float = 30.0,
    multiplier: float = 2.0,
    jitter: str = "full",
    retry_on: tuple[type[BaseException], ...] = (Exception,),
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, BaseException, float], None] | None = None,
    seed: int | None = None,
) -> T:
    """Call ``func`` until it succeeds or ``max_attempts`` attempts have failed.

    Only exceptions that are instances of ``retry_on`` are retried; anything else propagates
    at once. After the last failed attempt the last exception is re-raised unchanged.
    ``on_retry(attempt_number, exception, delay)`` is called before each sleep (use it to log).
    ``sleep`` is injectable so tests run instantly.
    """
    delays = retry_backoff(max_attempts, base_delay, max_delay, multiplier, jitter, seed)
    for attempt in range(1, max_attempts + 1):
        try:
            return func()
        except retry_on as exc:
            if attempt == max_attempts:
                raise
            delay = delays[attempt - 1]
            if on_retry is not None:
                on_retry(attempt, exc, delay)
            sleep(delay)
    raise AssertionError("unreachable: the loop either returns or raises")


def run(input: dict[str, Any]) -> dict[str, Any]:
    """JSON entry point.

    Input keys (all optional): ``max_attempts``, ``base_delay``, ``max_delay``, ``multiplier``,
    ``jitter``, ``seed``; they mean the same as the parameters of retry_backoff.
    Returns ``{"delays": [...], "total_delay": float, "attempts": int}``.
    """
    delays = retry_backoff(**input)
    return {
        "delays": delays,
        "total_delay": round(sum(delays), 6),
        "attempts": len(delays) + 1,
    }


if __name__ == "__main__":
    try:
        result = run(json.load(sys.stdin))
    except (ValueError, TypeError) as exc:
        print(json.dumps({"error": str(exc)}))
        sys.exit(1)
    print(json.dumps(result))
