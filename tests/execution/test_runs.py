"""executeSkill with real processes: every limit is exercised, nothing escapes, nothing is left behind."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.execution import service
from skillshelf.execution.containment import RunCgroup, user_process_allowance
from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.settings import ExecutionSettings
from tests.conftest import deadline
from tests.execution.conftest import all_gone, started_run

pytestmark = pytest.mark.anyio
BUNDLED = Path(__file__).resolve().parents[2] / "patterns"


async def run(library: SkillLibrary, settings: ExecutionSettings, skill: str, payload: Any = None, **kw: Any) -> Any:
    return await service.execute_skill(
        LibraryReader(library), settings, skill, {} if payload is None else payload, **kw
    )


async def failure(
    library: SkillLibrary, settings: ExecutionSettings, skill: str, payload: Any = None, **kw: Any
) -> SkillshelfError:
    with pytest.raises(SkillshelfError) as raised:
        await run(library, settings, skill, payload, **kw)
    return raised.value


async def test_a_python_skill_gets_json_input_and_returns_json_output(
    run_library: SkillLibrary, enabled: ExecutionSettings
) -> None:
    result = await run(run_library, enabled, "run/echo", {"text": "ab", "times": 2})
    assert (result.output, result.output_format, result.exit_code) == ({"echo": "abab"}, "json", 0)
    assert "noise on stdout" in (result.stderr_tail or "")  # the skill's prints never corrupt the result
    assert result.ran.entry == "echo(**input)"


async def test_run_input_is_called_when_there_is_no_named_function(
    run_library: SkillLibrary, enabled: ExecutionSettings
) -> None:
    result = await run(run_library, enabled, "run/viarun", {"b": 1, "a": 2})
    assert result.output == {"keys": ["a", "b"]} and result.ran.entry == "run(input)"


async def test_execution_is_off_unless_enabled_and_limited_to_the_allow_list(run_library: SkillLibrary) -> None:
    error = await failure(run_library, ExecutionSettings(), "run/echo", {"text": "x"})
    assert error.code == ErrorCode.EXECUTION_DISABLED and "--allow-exec" in error.message
    allow_list = ExecutionSettings(enabled=True, allow=["git/*"])
    error = await failure(run_library, allow_list, "run/echo", {"text": "x"})
    assert error.code == ErrorCode.EXECUTION_DISABLED and "allow-list" in error.message
    assert (await run(run_library, ExecutionSettings(enabled=True, allow=["run/e*"]), "run/echo", {"text": "x"})).output


async def test_an_infinite_loop_is_killed_at_its_timeout(run_library: SkillLibrary, enabled: ExecutionSettings) -> None:
    """The loop never ends by itself, so any bound proves it was stopped; not before its limit."""
    started = time.monotonic()
    error = await failure(run_library, enabled, "run/spin", timeout_s=1.0)
    assert error.code == ErrorCode.EXECUTION_TIMEOUT and "1 s limit" in error.message
    assert error.details is not None and error.details["signal"] is not None
    assert error.details["durationMs"] >= 1000
    assert time.monotonic() - started < deadline()  # stopped: it did not run on


async def test_a_memory_bomb_fails_cleanly(run_library: SkillLibrary, enabled: ExecutionSettings) -> None:
    error = await failure(run_library, enabled, "run/hog", {"mb": 4096})
    assert error.code == ErrorCode.SKILL_EXECUTION_FAILED and "MemoryError" in error.message
    assert (await run(run_library, enabled, "run/hog", {"mb": 8})).output == 8 * 1024 * 1024


async def test_a_fork_flood_is_contained(run_library: SkillLibrary, enabled: ExecutionSettings) -> None:
    contained = user_process_allowance(1) is not None or RunCgroup.available().pids
    if not contained:
        pytest.skip("neither RLIMIT_NPROC (root) nor a pids cgroup is available here")
    result = await run(run_library, enabled, "run/forker", {"n": 200})
    assert result.output["made"] < enabled.max_processes and result.output["failed"] > 0


async def test_100_mb_of_output_is_capped_and_the_run_stopped(
    run_library: SkillLibrary, enabled: ExecutionSettings
) -> None:
    error = await failure(run_library, enabled, "run/tools", script="scripts/flood.py")
    assert error.code == ErrorCode.SKILL_EXECUTION_FAILED and error.details and error.details["stdoutTruncated"]


async def test_a_stderr_flood_keeps_only_its_tail(run_library: SkillLibrary, enabled: ExecutionSettings) -> None:
    result = await run(run_library, enabled, "run/chatty")
    assert result.output == 1 and result.stderr_truncated


async def test_the_servers_secrets_never_reach_the_skill(
    run_library: SkillLibrary, enabled: ExecutionSettings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_secret")
    monkeypatch.setenv("ALLOWED_ONE", "visible")
    result = await run(run_library, enabled.model_copy(update={"env": ["ALLOWED_ONE"]}), "run/leak")
    assert "GITHUB_TOKEN" not in result.output and result.output["ALLOWED_ONE"] == "visible"
    assert set(result.output) <= {
        "PATH",
        "LANG",
        "HOME",
        "TMPDIR",
        "SKILLSHELF_SKILL_DIR",
        "PYTHONDONTWRITEBYTECODE",
        "PYTHONPYCACHEPREFIX",
        "ALLOWED_ONE",
        "LC_CTYPE",
        "PWD",
    }
    assert result.output["HOME"] == result.output["TMPDIR"] and not Path(result.output["HOME"]).exists()  # removed


@pytest.mark.parametrize("script", ["../SKILL.md", "scripts/../../../x.py", "/etc/passwd", "scripts/evil.py"])
async def test_scripts_outside_scripts_are_refused(
    run_library: SkillLibrary, enabled: ExecutionSettings, script: str
) -> None:
    error = await failure(run_library, enabled, "run/tools", script=script)
    assert error.code == ErrorCode.ACCESS_DENIED  # as docs/security.md says
    assert "escaped" not in str(error.details)


@pytest.mark.parametrize("extra", [{"script": "scripts/ok.sh"}, {"args": ["--fast"]}])
async def test_script_or_args_on_a_three_file_skill_is_refused_not_ignored(
    run_library: SkillLibrary, enabled: ExecutionSettings, extra: dict[str, Any]
) -> None:
    error = await failure(run_library, enabled, "run/echo", {"text": "x"}, **extra)
    assert error.code == ErrorCode.VALIDATION_ERROR and "three-file" in error.message
    assert next(iter(extra)) in error.message


async def test_a_script_gets_its_command_line_arguments(run_library: SkillLibrary, enabled: ExecutionSettings) -> None:
    library = SkillLibrary(
        LibraryConfig(roots=[BUNDLED], index_dir=run_library.index_path.parent / "bundled", watch=False)
    )
    try:
        library.sync()
        good = await run(library, enabled, "git/git-bisect-workflow", args=["exit 0"])
        assert good.output == {"verdict": "good", "exit_code": 0, "build_status": None, "test_status": 0}
        error = await failure(library, enabled, "git/git-bisect-workflow", args=["exit 3"])
        assert error.details is not None and error.details["exitCode"] == 1  # bisect's "bad"
        error = await failure(library, enabled, "git/git-bisect-workflow", args=["x"] * 65)
        assert error.code == ErrorCode.VALIDATION_ERROR and "args" in error.message
    finally:
        library.close()


async def test_a_raising_skill_reports_its_exception_without_foreign_paths(
    run_library: SkillLibrary, enabled: ExecutionSettings, run_root: Path
) -> None:
    error = await failure(run_library, enabled, "run/boom")
    assert error.code == ErrorCode.SKILL_EXECUTION_FAILED
    assert "ValueError: bad input: 42" in error.message
    assert error.details is not None
    frames = error.details["exception"]["frames"]
    assert frames and all(frame.startswith('File "boom.py"') for frame in frames)
    assert str(run_root.parent) not in str(error.details) and os.sep + "site-packages" not in str(error.details)


async def test_invalid_input_fails_validation_without_running(
    run_library: SkillLibrary, enabled: ExecutionSettings, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    error = await failure(run_library, enabled, "run/marker", {"path": str(marker), "count": "three"})
    assert error.code == ErrorCode.VALIDATION_ERROR and "count" in error.message
    assert not marker.exists()
    error = await failure(run_library, enabled, "run/echo", {"text": 5, "extra": True})
    assert error.code == ErrorCode.VALIDATION_ERROR  # schema derived from echo(text: str, times: int = 1)


async def test_scripts_take_stdin_json_and_plain_text_output_is_flagged(
    run_library: SkillLibrary, enabled: ExecutionSettings
) -> None:
    result = await run(run_library, enabled, "run/tools", {"a": 1}, script="ok.sh")
    assert result.output == {"got": {"a": 1}} and result.ran.interpreter == "sh"
    text = await run(run_library, enabled, "run/tools", script="scripts/text.py")
    assert (text.output, text.output_format) == ("plain words, not json\n", "text")
    error = await failure(run_library, enabled, "run/tools", script="scripts/fail.py")
    assert error.details is not None and error.details["exitCode"] == 3 and "it broke" in error.message


async def test_a_folder_with_several_scripts_needs_script_named(
    run_library: SkillLibrary, enabled: ExecutionSettings
) -> None:
    error = await failure(run_library, enabled, "run/tools")
    assert error.code == ErrorCode.VALIDATION_ERROR and "scripts/ok.sh" in error.message


async def test_docs_only_skills_are_not_executable(run_library: SkillLibrary, enabled: ExecutionSettings) -> None:
    error = await failure(run_library, enabled, "run/docs-only")
    assert error.code == ErrorCode.NOT_EXECUTABLE and "loadSkill" in error.message


@pytest.mark.skipif(not Path("/proc/self/cwd").exists(), reason="finding the run's processes needs /proc")
async def test_cancelling_a_run_kills_the_child_and_leaves_no_orphan(
    run_library: SkillLibrary, enabled: ExecutionSettings
) -> None:
    async with anyio.create_task_group() as group:
        group.start_soon(run, run_library, enabled, "run/sleeper", {"token": "cancel-me", "seconds": 30})
        pids = await started_run("cancel-me")
        assert pids
        group.cancel_scope.cancel()
    await all_gone(pids)


async def test_a_dry_run_validates_and_describes_without_running(run_library: SkillLibrary, tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    result = service.dry_run(
        LibraryReader(run_library), ExecutionSettings(), "run/marker", {"path": str(marker), "count": 1}, None, 5
    )
    assert result.input_valid and result.schema_source == "declared" and not result.execution_enabled
    assert result.would_run.entry == "marker(**input)" and result.would_run.timeout_s == 5
    assert not marker.exists()


async def test_a_successful_run_records_a_usage_event(run_library: SkillLibrary, enabled: ExecutionSettings) -> None:
    await run(run_library, enabled, "run/echo", {"text": "x"})
    (usage,) = run_library.usage.usage("run/echo")
    assert usage.uses == 1


@pytest.mark.skipif(shutil.which("node") is None, reason="node is not on PATH")
async def test_a_javascript_skill_runs_under_node(
    run_root: Path, run_library: SkillLibrary, enabled: ExecutionSettings
) -> None:
    js = "module.exports.shout = ({ text }) => {\n  console.log('noise');\n  return { loud: text.toUpperCase() };\n};\n"
    (run_root / "run" / "shout.md").write_text("# Shout\n\nUpper-cases text.\n", encoding="utf-8")
    (run_root / "run" / "shout.js").write_text(js, encoding="utf-8")
    run_library.sync()
    result = await run(run_library, enabled, "run/shout", {"text": "hey"})
    assert result.output == {"loud": "HEY"} and result.ran.interpreter == "node"


async def test_typescript_needs_a_node_that_strips_types(
    run_root: Path, run_library: SkillLibrary, enabled: ExecutionSettings
) -> None:
    from skillshelf.execution.plan import TYPESCRIPT_NODE, _node_version

    version = _node_version()
    if version is not None and version >= TYPESCRIPT_NODE:
        pytest.skip("this node runs TypeScript")
    (run_root / "run" / "typed.md").write_text("# Typed\n\nTypeScript skill.\n", encoding="utf-8")
    (run_root / "run" / "typed.ts").write_text("export const typed = (i: {a: number}) => i.a;\n", encoding="utf-8")
    run_library.sync()
    error = await failure(run_library, enabled, "run/typed")
    assert error.code == ErrorCode.NOT_EXECUTABLE and ("Node 22.6" in error.message or "node" in error.message)
