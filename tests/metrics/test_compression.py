"""Session compression (pyfakefs): every metrics format the seed reads, and never a division by zero."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pyfakefs.fake_filesystem_unittest import Patcher

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.metrics.compression import TokenCounts, compression_report, extract_counts
from skillshelf.projects import ProjectRoots
from tests.artifacts.conftest import session_file, session_json

# Paths are made inside each test: on Python 3.13 a Path built before pyfakefs patches resolves on the real disk.


def root() -> Path:
    return Path("/home/me/Dev")


def app() -> Path:
    return root() / "app"


SHAPES: dict[str, dict[str, Any]] = {
    "compressionMetrics": {"compressionMetrics": {"inputTokens": {"total": 50000}, "outputArtifacts": {"total": 2500}}},
    "compression": {"compression": {"raw_context_tokens": 50000, "compressed_tokens": 2500}},
    "metrics": {"metrics": {"original_context_size_tokens": 50000, "finalization_pack_size_tokens": 2500}},
    "tokens": {"tokens": {"original": 50000, "compressed": 2500}},
    "snake wrapped": {"compression_metrics": {"input_tokens": {"total": 50000}, "output_artifacts": {"total": 2500}}},
    "camel wrapped": {"compression": {"rawContextTokens": 50000, "compressedTokens": 2500}},
}
TOP_LEVEL: dict[str, dict[str, Any]] = {
    "inputTokens": {"inputTokens": {"total": 50000}, "outputArtifacts": {"total": 2500}},
    "raw_context_tokens": {"raw_context_tokens": 50000, "compressed_tokens": 2500},
    "original_context_size_tokens": {"original_context_size_tokens": 50000, "finalization_pack_size_tokens": 2500},
    "original": {"original": 50000, "compressed": 2500},
}


@pytest.fixture
def roots(fs: Patcher) -> ProjectRoots:
    app().mkdir(parents=True)
    return ProjectRoots.of([root()])


def only_session(roots: ProjectRoots, session_id: str = "2025-11-05-s") -> tuple[dict[str, Any], list[str]]:
    report = compression_report(roots, "app", session_id)
    (row,) = report.sessions
    return row.model_dump(mode="json", exclude_none=True), report.warnings


@pytest.mark.parametrize("shape", SHAPES.values(), ids=SHAPES.keys())
@pytest.mark.parametrize("source", ["compression-metrics.json", "finalization-pack.json"])
def test_every_wrapped_format_in_every_session_file_gives_the_ratio(
    roots: ProjectRoots, shape: dict[str, Any], source: str
) -> None:
    session_json(app(), f"2025-11-05-s/{source}", shape)
    row, warnings = only_session(roots)
    assert row == {
        "sessionId": "2025-11-05-s",
        "date": "2025-11-05",
        "originalTokens": 50000,
        "compressedTokens": 2500,
        "ratio": 0.05,
        "tokensSaved": 47500,
        "compressionRatio": 95.0,
        "source": f"2025-11-05-s/{source}",
    }
    assert warnings == []


@pytest.mark.parametrize("shape", [*SHAPES.values(), *TOP_LEVEL.values()], ids=[*SHAPES, *TOP_LEVEL])
def test_the_flat_metrics_file_accepts_every_shape_wrapped_or_at_its_top_level(
    roots: ProjectRoots, shape: dict[str, Any]
) -> None:
    session_file(app(), "2025-11-05-s.md", "# S\n")
    session_json(app(), "2025-11-05-s.metrics.json", shape)
    row, warnings = only_session(roots)
    assert (row["ratio"], row["tokensSaved"], row["source"]) == (0.05, 47500, "2025-11-05-s.metrics.json")
    assert warnings == []


def test_compression_metrics_win_over_the_pack(roots: ProjectRoots) -> None:
    session_json(app(), "2025-11-05-s/finalization-pack.json", SHAPES["tokens"])
    session_json(app(), "2025-11-05-s/compression-metrics.json", {"tokens": {"original": 1000, "compressed": 500}})
    row, _ = only_session(roots)
    assert (row["ratio"], row["source"]) == (0.5, "2025-11-05-s/compression-metrics.json")


@pytest.mark.parametrize(
    ("data", "said"),
    [
        ({"tokens": {"original": 0, "compressed": 100}}, "is zero"),
        ({"tokens": {"compressed": 100}}, "is missing"),
        ({"compression": {"raw_context_tokens": "n/a", "compressed_tokens": 10}}, "is missing"),
        ({"tokens": {"original": -5, "compressed": 10}}, "is missing"),
    ],
)
def test_a_zero_or_missing_original_is_reported_and_never_divided_by(
    roots: ProjectRoots, data: dict[str, Any], said: str
) -> None:
    session_json(app(), "2025-11-05-s/compression-metrics.json", data)
    report = compression_report(roots, "app")
    (row,) = report.sessions
    assert row.ratio is None and row.tokens_saved is None
    assert len(report.warnings) == 1 and said in report.warnings[0] and "2025-11-05-s" in report.warnings[0]
    assert report.aggregate.model_dump(mode="json", exclude_none=True) == {"sessions": 0, "totalSaved": 0}


def test_a_missing_compressed_count_gives_no_ratio(roots: ProjectRoots) -> None:
    session_json(app(), "2025-11-05-s/compression-metrics.json", {"tokens": {"original": 1000}})
    row, warnings = only_session(roots)
    assert row == {"sessionId": "2025-11-05-s", "date": "2025-11-05", "originalTokens": 1000, "source": row["source"]}
    assert "compressed token count" in warnings[0]


def test_malformed_metrics_json_is_a_warning_and_the_pack_is_used_instead(roots: ProjectRoots) -> None:
    session_file(app(), "2025-11-05-s/compression-metrics.json", '{"tokens": {"original": 10')
    session_json(app(), "2025-11-05-s/finalization-pack.json", SHAPES["metrics"])
    row, warnings = only_session(roots)
    assert (row["ratio"], row["source"]) == (0.05, "2025-11-05-s/finalization-pack.json")
    (warning,) = warnings
    assert warning.startswith("2025-11-05-s/compression-metrics.json is not valid JSON (") and "line 1" in warning


@pytest.mark.parametrize("data", [[1, 2], "text", {"unrelated": {"keys": 1}}])
def test_metrics_json_of_the_wrong_shape_is_a_warning(roots: ProjectRoots, data: Any) -> None:
    session_json(app(), "2025-11-05-s/compression-metrics.json", data)
    row, warnings = only_session(roots)
    assert row == {"sessionId": "2025-11-05-s", "date": "2025-11-05"}
    assert warnings == [
        "2025-11-05-s/compression-metrics.json has no token counts in a known shape (e.g. tokens.original/compressed)",
        "2025-11-05-s has no compression metrics; add compression-metrics.json",
    ]


def test_binary_and_huge_metrics_files_are_skipped_with_warnings(roots: ProjectRoots) -> None:
    binary = app() / ".agent-artifacts" / "2025-11-05-s" / "compression-metrics.json"
    binary.parent.mkdir(parents=True)
    binary.write_bytes(b"\x00\x01\x02")
    session_file(
        app(), "2025-11-06-t.metrics.json", '{"tokens": {"original": 1, "compressed": 1}, "pad": "' + "x" * 4096
    )
    report = compression_report(roots, "app", max_bytes=1024)
    assert [s.ratio for s in report.sessions] == []
    assert report.warnings == [
        "2025-11-05-s/compression-metrics.json is binary (contains NUL bytes); it was skipped",
        "2025-11-06-t.metrics.json is larger than 1 KiB; it was skipped",
        "2 session(s) have no compression metrics and are not listed: 2025-11-05-s, 2025-11-06-t",
    ]


def test_counts_may_be_numeric_strings_floats_or_objects_without_a_total() -> None:
    assert extract_counts({"tokens": {"original": "12,000", "compressed": 600.4}}) == TokenCounts(12000, 600)
    assert extract_counts({"compressionMetrics": {"inputTokens": {"chat": 900, "files": 100}, "outputArtifacts": 50}})
    assert extract_counts({"inputTokens": {"chat": 900, "files": 100}}) == TokenCounts(1000, None)
    assert extract_counts({"tokens": {"original": True, "compressed": 1}}) == TokenCounts(None, 1)
    assert extract_counts([1, 2]) is None and extract_counts({"tokens": 5}) is None


def test_the_aggregate_covers_every_session_with_a_ratio(roots: ProjectRoots) -> None:
    session_json(app(), "2025-01-01-a/compression-metrics.json", {"tokens": {"original": 1000, "compressed": 100}})
    session_json(app(), "2025-01-02-b.metrics.json", {"tokens": {"original": 1000, "compressed": 300}})
    session_json(app(), "2025-01-03-c/finalization-pack.json", {"metrics": {"original_context_size_tokens": 0}})
    session_file(app(), "2025-01-04-d.md", "# No metrics at all\n")
    report = compression_report(roots, "app")
    assert [(s.session_id, s.ratio) for s in report.sessions] == [
        ("2025-01-01-a", 0.1),
        ("2025-01-02-b", 0.3),
        ("2025-01-03-c", None),
    ]
    assert report.aggregate.model_dump(mode="json") == {
        "sessions": 2,
        "meanRatio": 0.2,
        "compressionRatio": 80.0,
        "totalSaved": 1600,
        "best": {"sessionId": "2025-01-01-a", "ratio": 0.1},
        "worst": {"sessionId": "2025-01-02-b", "ratio": 0.3},
    }
    assert report.warnings[-1] == "1 session(s) have no compression metrics and are not listed: 2025-01-04-d"


def test_one_session_without_metrics_is_listed_with_nulls_and_a_warning(roots: ProjectRoots) -> None:
    session_file(app(), "2025-01-04-d.md", "# No metrics\n")
    row, warnings = only_session(roots, "2025-01-04-d")
    assert row == {"sessionId": "2025-01-04-d", "date": "2025-01-04"}
    assert warnings == ["2025-01-04-d has no compression metrics; add compression-metrics.json"]


def test_unknown_sessions_and_projects_fail_with_their_codes(roots: ProjectRoots) -> None:
    session_file(app(), "2025-01-04-d.md", "# D\n")
    for project, session_id, code in [
        ("app", "2025-01-04-e", ErrorCode.SESSION_NOT_FOUND),
        ("nope", None, ErrorCode.PROJECT_NOT_FOUND),
        ("../x", None, ErrorCode.ACCESS_DENIED),
        ("app", "../x", ErrorCode.VALIDATION_ERROR),
    ]:
        with pytest.raises(SkillshelfError) as raised:
            compression_report(roots, project, session_id)
        assert raised.value.code == code


def test_a_project_without_artifacts_has_an_empty_report(roots: ProjectRoots) -> None:
    report = compression_report(roots, "app")
    assert (report.sessions, report.aggregate.sessions, report.warnings) == ([], 0, [])


def test_the_seed_percentage_is_reported_under_the_seed_name(roots: ProjectRoots) -> None:
    """The seed's example: 40,000 tokens compressed to 1,200 is compressionRatio 97.0 (percent saved)."""
    session_json(app(), "2025-11-05-s/compression-metrics.json", {"tokens": {"original": 40000, "compressed": 1200}})
    row, _ = only_session(roots)
    assert (row["ratio"], row["compressionRatio"]) == (0.03, 97.0)
