"""Sign and verify webhook payloads with HMAC-SHA256 and a timestamp (replay window).

Header format (the widely used ``t=...,v1=...`` shape):

    Webhook-Signature: t=1763630000,v1=db1535596f97fb8a5397ad3f5d2d1ffb7c1db0713ea18a54352372370e4f184b

where ``v1`` is hex HMAC-SHA256 over ``f"{t}.".encode() + raw_body``. Several ``v1`` entries may
be present while the sender rotates secrets; several receiver secrets may be tried for the same.
The example above is for secret ``whsec_test`` and body ``{"id":"evt_1","type":"invoice.paid"}``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
import sys
import time
from typing import Any

HEX64 = re.compile(r"^[0-9a-f]{64}$")


def compute_signature(secret: str, timestamp: int, payload: bytes) -> str:
    """Return the hex HMAC-SHA256 of ``b"<timestamp>." + payload`` keyed with ``secret``."""
    message = str(timestamp).encode("ascii") + b"." + payload
    return hmac.new(secret.encode("utf-8"), message, hashlib.sha256).hexdigest()


def sign_webhook(secret: str, payload: str | bytes, timestamp: int) -> str:
    """Return the signature header value for ``payload`` sent at ``timestamp`` (Unix seconds)."""
    body = payload.encode("utf-8") if isinstance(payload, str) else payload
    return f"t={timestamp},v1={compute_signature(secret, timestamp, body)}"


def _parse_header(header: str) -> tuple[int, list[str]] | None:
    timestamp: int | None = None
    signatures: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            return None
        if key == "t":
            if not value.isascii() or not value.isdigit() or timestamp is not None:
                return None
            timestamp = int(value)
        elif key == "v1":
            signatures.append(value.lower())
    if timestamp is None or not signatures:
        return None
    return timestamp, signatures


def webhook_hmac_verify(
    secrets: list[str],
    payload: str,
    signature_header: str,
    now: int | None = None,
    tolerance_seconds: int = 300,
) -> dict[str, Any]:
    """Verify a webhook delivery.

    ``payload`` must be the raw request body exactly as received (decoded as UTF-8 here; use
    ``compute_signature`` with bytes if the body is not text). ``secrets`` lists every currently
    valid secret (two during a rotation). ``now`` defaults to the current Unix time.

    Returns ``{"valid": bool, "reason": str, "timestamp": int | None}`` where ``reason`` is one
    of ``ok``, ``malformed_header``, ``timestamp_out_of_tolerance``, ``signature_mismatch``.
    Comparisons are constant-time.

    Raises:
        ValueError: if ``secrets`` is empty or contains an empty secret, or tolerance < 0.
    """
    if not secrets or any(not secret for secret in secrets):
        raise ValueError("at least one non-empty secret is required")
    if tolerance_seconds < 0:
        raise ValueError("tolerance_seconds must not be negative")
    parsed = _parse_header(signature_header)
    if parsed is None:
        return {"valid": False, "reason": "malformed_header", "timestamp": None}
    timestamp, candidates = parsed
    current = int(time.time()) if now is None else now
    if abs(current - timestamp) > tolerance_seconds:
        return {"valid": False, "reason": "timestamp_out_of_tolerance", "timestamp": timestamp}
    body = payload.encode("utf-8")
    # Compare only well-formed hex: compare_digest raises TypeError on non-ASCII strings.
    candidates = [candidate for candidate in candidates if HEX64.match(candidate)]
    matched = False
    for secret in secrets:
        expected = compute_signature(secret, timestamp, body)
        for candidate in candidates:
            matched |= hmac.compare_digest(expected, candidate)
    reason = "ok" if matched else "signature_mismatch"
    return {"valid": matched, "reason": reason, "timestamp": timestamp}


def verify_github_signature(secret: str, body: bytes, header: str) -> bool:
    """Verify GitHub's ``X-Hub-Signature-256: sha256=<hex>`` header (no timestamp in that scheme)."""
    prefix = "sha256="
    if not header.startswith(prefix) or not HEX64.match(header[len(prefix) :]):
        return False
    expected = hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header[len(prefix) :])


def run(input: dict[str, Any]) -> dict[str, Any]:
    """JSON entry point.

    Input keys: ``secrets``, ``payload``, ``signature_header`` (required), ``now`` and
    ``tolerance_seconds`` (optional). Returns ``{"valid", "reason", "timestamp"}``.
    """
    return webhook_hmac_verify(**input)


if __name__ == "__main__":
    try:
        result = run(json.load(sys.stdin))
    except (ValueError, TypeError) as exc:
        print(json.dumps({"error": str(exc)}))
        sys.exit(1)
    print(json.dumps(result))
