"""`skillshelf log`: the call log summarised per tool."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from skillshelf.cli import cli


def test_log_summarises_the_call_log(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    lines = [
        {"ts": 1.0, "tool": "loadSkill", "ms": 3.0, "ok": True, "skill": "python/slugify", "caller": "alice"},
        {"ts": 2.0, "tool": "loadSkill", "ms": 5.0, "ok": False, "code": "PATTERN_NOT_FOUND", "skill": "x/y"},
        {"ts": 3.0, "tool": "searchPatterns", "ms": 2.0, "ok": True},
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines) + "not json\n", encoding="utf-8")
    text = CliRunner().invoke(cli, ["log", "--path", str(log)])
    assert text.exit_code == 0, text.output
    assert text.output.splitlines()[0].startswith("3 calls, 1 error (")
    assert "loadSkill" in text.output and "50.0%" in text.output and "python/slugify (1)" in text.output
    summary = json.loads(CliRunner().invoke(cli, ["log", "--path", str(log), "--json"]).output)
    assert summary["calls"] == 3 and summary["tools"][0]["tool"] == "loadSkill"
    assert summary["error_codes"] == {"PATTERN_NOT_FOUND": 1}
