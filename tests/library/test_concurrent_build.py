"""Several processes starting on one library at once: one builds the index, the others wait for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import three_file

SKILLS = 300


def test_processes_started_together_each_answer_from_the_complete_index(tmp_path: Path) -> None:
    root = tmp_path / "library"
    for i in range(SKILLS):
        three_file(root, f"cat{i % 10}", f"skill-{i}", f"# Skill {i}\n\nDoes thing number {i} with care.\n")
    env = {**os.environ, "SKILLSHELF_CACHE_DIR": str(tmp_path / "cache")}
    command = [sys.executable, "-m", "skillshelf", "stats", "--json", "--library", str(root)]
    runs = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(4)
    ]
    outcomes = [run.communicate(timeout=180) for run in runs]
    for run, (out, err) in zip(runs, outcomes, strict=True):
        assert run.returncode == 0, err
        assert json.loads(out)["skills"] == SKILLS, err
        assert "locked" not in err and "Traceback" not in err, err
