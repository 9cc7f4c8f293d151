"""Several processes starting on one library at once: one builds the index, the others wait for it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.index.store import SearchFilters
from tests.conftest import agent_skill, deadline, three_file

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
    outcomes = [run.communicate(timeout=deadline(180)) for run in runs]
    for run, (out, err) in zip(runs, outcomes, strict=True):
        assert run.returncode == 0, err
        assert json.loads(out)["skills"] == SKILLS, err
        assert "locked" not in err and "Traceback" not in err, err


def test_a_library_sees_words_another_process_indexed_after_it_cached_their_absence(tmp_path: Path) -> None:
    """Two servers share one index; the one that did not write must not keep "no skill has this
    word" (or the skill count) cached from before the other stored a new skill."""
    root = tmp_path / "library"
    agent_skill(root, "tools", "hammer", "name: hammer\ndescription: Drive nails into wood.")
    config = LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False)
    writer, reader = SkillLibrary(config), SkillLibrary(config)
    try:
        writer.sync()
        assert reader.search("zebra stripes", SearchFilters(), 5) == []  # "zebra" matches nothing: cached
        assert reader.index.count() == 1
        agent_skill(root, "tools", "zebra", "name: zebra\ndescription: Paint zebra stripes on a wall.")
        writer.sync()  # the other process stores it; this one's own sync would find nothing to write
        assert [s.id for s in reader.search("zebra stripes", SearchFilters(), 5)] == ["tools/zebra"]
        assert reader.index.count() == 2
    finally:
        writer.close()
        reader.close()
