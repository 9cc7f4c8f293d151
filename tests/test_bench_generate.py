"""The benchmark's generator stays runnable: a small library with answerable queries."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import deadline

BENCH = Path(__file__).resolve().parents[1] / "bench" / "generate.py"


def test_the_generator_writes_a_valid_library_with_answerable_queries(tmp_path: Path) -> None:
    out = tmp_path / "lib"
    result = subprocess.run(
        [sys.executable, str(BENCH), "--n", "60", "--out", str(out), "--check"],
        capture_output=True,
        text=True,
        timeout=deadline(120),
        check=False,
    )
    assert result.returncode == 0, result.stderr
    queries = json.loads(Path(f"{out}.queries.json").read_text(encoding="utf-8"))["queries"]
    assert queries and all((out / q["answer"].split("/")[0]).is_dir() for q in queries)
