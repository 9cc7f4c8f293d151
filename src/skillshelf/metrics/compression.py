"""Compression of past sessions: how small a session's artifacts are next to the context they replace.

ratio = compressed tokens / original tokens (0.05: the artifacts are a twentieth of the context),
tokens saved = original - compressed. The counts come from whichever of a session's files has
them, in this order: `<id>/compression-metrics.json`, `<id>.metrics.json`, `<id>/finalization-pack.json`.
Every shape the seed's server reads is accepted, in camelCase or snake_case, wrapped or at the
top level:

- `compressionMetrics.inputTokens.total` / `compressionMetrics.outputArtifacts.total`
- `compression.raw_context_tokens` / `compression.compressed_tokens`
- `metrics.original_context_size_tokens` / `metrics.finalization_pack_size_tokens`
- `tokens.original` / `tokens.compressed`

A zero or missing original is never divided by: the session is listed with a null ratio and a
warning says why.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from skillshelf.artifacts.parsing import snake_keys
from skillshelf.artifacts.store import (
    MAX_FILE_BYTES,
    METRICS_FILE,
    PACK_JSON,
    SessionFiles,
    find_session,
    list_project_sessions,
    read_artifact_json,
)
from skillshelf.envelope import WireModel
from skillshelf.projects import ProjectRoots

RATIO_DESCRIPTION = (
    "compressed / original tokens: 0.05 means the session's artifacts are a twentieth of the context they "
    "replace (lower is better); null when the original count is zero or unknown"
)
PERCENT_DESCRIPTION = (
    "the seed's compressionRatio: percent of the original tokens saved, (original - compressed) / original x 100, "
    "e.g. 97.0 for 40,000 -> 1,200 (higher is better)"
)
# (original, compressed) key pairs, each tried inside these containers and then at the top level.
_PAIRS = (
    ("input_tokens", "output_artifacts"),
    ("raw_context_tokens", "compressed_tokens"),
    ("original_context_size_tokens", "finalization_pack_size_tokens"),
    ("original", "compressed"),
)
_CONTAINERS = ("compression_metrics", "compression", "metrics", "tokens")
MAX_LISTED_WITHOUT_METRICS = 10


class SessionCompression(WireModel):
    session_id: str
    date: str
    original_tokens: int | None = None
    compressed_tokens: int | None = None
    ratio: float | None = Field(default=None, description=RATIO_DESCRIPTION)
    tokens_saved: int | None = Field(default=None, description="original - compressed tokens")
    compression_ratio: float | None = Field(default=None, description=PERCENT_DESCRIPTION)
    source: str | None = None  # the file the counts came from, relative to .agent-artifacts/


class SessionRatio(WireModel):
    session_id: str
    ratio: float = Field(description=RATIO_DESCRIPTION)


class CompressionAggregate(WireModel):
    sessions: int  # sessions with a ratio (the mean, best and worst are over these)
    mean_ratio: float | None = Field(default=None, description="mean of the sessions' ratios; " + RATIO_DESCRIPTION)
    compression_ratio: float | None = Field(
        default=None, description="percent saved over all rated sessions' tokens; " + PERCENT_DESCRIPTION
    )
    total_saved: int
    best: SessionRatio | None = None  # the lowest ratio: most compressed
    worst: SessionRatio | None = None  # the highest ratio


class CompressionReport(WireModel):
    project: str
    sessions: list[SessionCompression]
    aggregate: CompressionAggregate
    warnings: list[str] = Field(default_factory=list)


@dataclass(frozen=True)
class TokenCounts:
    original: int | None
    compressed: int | None


def compression_report(
    projects: ProjectRoots, project: str, session_id: str | None = None, max_bytes: int = MAX_FILE_BYTES
) -> CompressionReport:
    """Per-session compression and its aggregate, for one session or every session of a project."""
    warnings: list[str] = []
    if session_id is not None:
        found = find_session(projects, project, session_id)
        name, sessions = found.project, [found]
    else:
        resolved, scan = list_project_sessions(projects, project)
        name, sessions = resolved.name, sorted(scan.sessions.values(), key=lambda s: (s.date, s.session_id))
        warnings.extend(scan.findings)  # e.g. a session folder linked out of .agent-artifacts/, skipped
    rows: list[SessionCompression] = []
    without: list[str] = []
    for session in sessions:
        row = session_compression(session, warnings, max_bytes)
        if row is None and session_id is None:
            without.append(session.session_id)
        else:
            rows.append(row or SessionCompression(session_id=session.session_id, date=session.date))
            if row is None:
                warnings.append(f"{session.session_id} has no compression metrics; add {METRICS_FILE}")
    if without:
        more = "…" if len(without) > MAX_LISTED_WITHOUT_METRICS else ""
        listed = ", ".join(without[:MAX_LISTED_WITHOUT_METRICS]) + more
        warnings.append(f"{len(without)} session(s) have no compression metrics and are not listed: {listed}")
    return CompressionReport(project=name, sessions=rows, aggregate=aggregate(rows), warnings=warnings)


def session_compression(
    session: SessionFiles, warnings: list[str], max_bytes: int = MAX_FILE_BYTES
) -> SessionCompression | None:
    """The session's counts from its first file that has them; None when no file has any."""
    sid = session.session_id
    for label, path in _sources(session):
        ok, data = read_artifact_json(path, label, warnings, max_bytes)
        counts = extract_counts(data) if ok else None
        if counts is None:
            if ok and not label.endswith(PACK_JSON):
                warnings.append(f"{label} has no token counts in a known shape (e.g. tokens.original/compressed)")
            continue
        row = SessionCompression(
            session_id=sid,
            date=session.date,
            original_tokens=counts.original,
            compressed_tokens=counts.compressed,
            source=label,
        )
        if not counts.original:
            warnings.append(f"{sid}: the original token count in {label} is {_missing(counts.original)}; no ratio")
        elif counts.compressed is None:
            warnings.append(f"{sid}: the compressed token count in {label} is missing; no ratio")
        else:
            row.ratio = round(counts.compressed / counts.original, 4)
            row.tokens_saved = counts.original - counts.compressed
            row.compression_ratio = percent_saved(counts.original, counts.compressed)
        return row
    return None


def _sources(session: SessionFiles) -> Iterable[tuple[str, Any]]:
    sid = session.session_id
    candidates = [
        (f"{sid}/{METRICS_FILE}", session.file(METRICS_FILE)),
        (f"{sid}.metrics.json", session.flat_metrics),
        (f"{sid}/{PACK_JSON}", session.file(PACK_JSON)),
    ]
    return [(label, path) for label, path in candidates if path is not None]


def _missing(value: int | None) -> str:
    return "missing" if value is None else "zero"


def extract_counts(data: Any) -> TokenCounts | None:
    """(original, compressed) from any accepted shape; None when no shape's keys are present at all."""
    if not isinstance(data, dict):
        return None
    normalised = snake_keys(data)
    places = [normalised[c] for c in _CONTAINERS if isinstance(normalised.get(c), dict)] + [normalised]
    for place in places:
        for original_key, compressed_key in _PAIRS:
            if original_key in place or compressed_key in place:
                return TokenCounts(_count(place.get(original_key)), _count(place.get(compressed_key)))
    return None


def _count(value: Any) -> int | None:
    """A token count: a number, a numeric string ("12,400") or an object with a `total` (else its numbers summed)."""
    if isinstance(value, dict):
        if "total" in value:
            return _count(value["total"])
        numbers = [n for n in (_count(v) for v in value.values() if not isinstance(v, dict)) if n is not None]
        return sum(numbers) if numbers else None
    if isinstance(value, str):
        try:
            value = float(value.replace(",", "").replace("_", "").strip())
        except ValueError:
            return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if math.isnan(value) or math.isinf(value) or value < 0:
        return None
    return round(value)


def percent_saved(original: int, compressed: int) -> float:
    """The seed's `compressionRatio`: (original - compressed) / original x 100, one decimal."""
    return round((original - compressed) / original * 100, 1)


def aggregate(rows: list[SessionCompression]) -> CompressionAggregate:
    rated = [SessionRatio(session_id=row.session_id, ratio=row.ratio) for row in rows if row.ratio is not None]
    if not rated:
        return CompressionAggregate(sessions=0, total_saved=0)
    rated_rows = [row for row in rows if row.ratio is not None]
    original = sum(row.original_tokens or 0 for row in rated_rows)
    compressed = sum(row.compressed_tokens or 0 for row in rated_rows)
    return CompressionAggregate(
        sessions=len(rated),
        compression_ratio=percent_saved(original, compressed) if original else None,
        mean_ratio=round(sum(r.ratio for r in rated) / len(rated), 4),
        total_saved=sum(row.tokens_saved or 0 for row in rows if row.ratio is not None),
        best=min(rated, key=lambda r: (r.ratio, r.session_id)),
        worst=max(rated, key=lambda r: (r.ratio, r.session_id)),
    )
