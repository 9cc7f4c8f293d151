"""One place decides what the server's child processes get (library/children.py): every place in the
source that starts a process goes through it (found by reading the source), helper processes get no
secrets, and nothing skillshelf imports or runs writes bytecode into a library."""

from __future__ import annotations

import ast
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillshelf.execution import service
from skillshelf.library import children
from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.settings import ExecutionSettings
from tests.conftest import agent_skill, deadline, three_file, write
from tests.source_analysis import parsed

SRC = Path(__file__).resolve().parents[1] / "src" / "skillshelf"
CHILDREN = "skillshelf.library.children"
PATTERNS = Path(__file__).resolve().parents[1] / "patterns"

# Calls that start a process, by the module they come from.
SPAWNING_MODULES = ("subprocess.", "multiprocessing.", "concurrent.futures.ProcessPool", "pty.")
SPAWNING_CALLS = frozenset(
    {
        "anyio.open_process",
        "anyio.run_process",
        "asyncio.create_subprocess_exec",
        "asyncio.create_subprocess_shell",
        "os.system",
        "os.popen",
        "os.fork",
        "os.forkpty",
        "os.posix_spawn",
        "os.posix_spawnp",
        "uvicorn.supervisors.Multiprocess",
    }
)
NOT_SPAWNING = frozenset({"subprocess.TimeoutExpired", "subprocess.CompletedProcess", "subprocess.CalledProcessError"})
# The sites outside library/children.py, and why each is covered (checked below, not just claimed).
KNOWN_SITES = {
    ("skillshelf.execution.runner", "run_child"): "a skill: children.skill_environment, _child.py closes fds",
    ("skillshelf.execution._child", "main"): "the skill's own process replacing itself (exec mode)",
    ("skillshelf.server.workers", "run_http_workers"): "uvicorn's workers: children.helper_environment_only",
}


def _imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> what it names (`sp` -> `subprocess`, `Popen` -> `subprocess.Popen`)."""
    names: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = (
                    alias.name if alias.asname else alias.name.split(".")[0]
                )
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return names


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _spawns(qualified: str) -> bool:
    if qualified in NOT_SPAWNING:
        return False
    if qualified.startswith("os.exec") or qualified.startswith("os.spawn"):
        return True
    return qualified in SPAWNING_CALLS or qualified.startswith(SPAWNING_MODULES)


def spawn_sites() -> Iterator[tuple[str, str, int, str]]:
    """(module, enclosing function, line, what is called) for every call that starts a process."""
    for path in sorted(SRC.rglob("*.py")):
        module = ".".join(path.relative_to(SRC.parent).with_suffix("").parts).removesuffix(".__init__")
        tree = parsed(path)
        imported = _imports(tree)
        for function in [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]:
            for node in ast.walk(function):
                if not isinstance(node, ast.Call) or (name := _dotted(node.func)) is None:
                    continue
                head, _, rest = name.partition(".")
                qualified = ".".join(filter(None, [imported.get(head, head), rest]))
                if _spawns(qualified):
                    yield module, function.name, node.lineno, qualified


def test_every_place_that_starts_a_process_goes_through_the_children_module() -> None:
    sites = sorted(set(spawn_sites()))
    outside = {
        (module, function) for module, function, _line, _call in sites if module != "skillshelf.library.children"
    }
    unknown = sorted(outside - set(KNOWN_SITES))
    assert not unknown, (
        f"these start processes without library/children.py: {unknown}. Use children.run/popen (or add the site "
        "to KNOWN_SITES with what covers its fds, environment and dumpability)"
    )
    assert set(KNOWN_SITES) <= outside, "a known site no longer starts a process: update KNOWN_SITES"
    inside = {call for module, _function, _line, call in sites if module == CHILDREN}
    assert inside == {"subprocess.run", "subprocess.Popen"}


def test_the_search_for_spawn_sites_finds_them_in_any_spelling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    package = tmp_path / "skillshelf"
    write(
        package / "sample.py",
        """
        import subprocess as sp
        from multiprocessing import get_context
        import os
        def a():
            sp.check_output(["x"])
        def b():
            get_context("spawn")
        def c():
            os.execvp("x", ["x"])
        def d():
            raise sp.TimeoutExpired("x", 1)
        """,
    )
    monkeypatch.setattr(sys.modules[__name__], "SRC", package)
    found = {(function, call) for _module, function, _line, call in spawn_sites()}
    assert found == {("a", "subprocess.check_output"), ("b", "multiprocessing.get_context"), ("c", "os.execvp")}


def _function(module: str, name: str) -> ast.FunctionDef | ast.AsyncFunctionDef:
    path = SRC.parent / (module.replace(".", "/") + ".py")
    for node in ast.walk(parsed(path)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name == name:
            return node
    raise AssertionError(f"{module}.{name} not found")


def test_the_known_sites_do_what_they_claim() -> None:
    execute = _function("skillshelf.execution.service", "execute_skill")
    run_calls = [n for n in ast.walk(execute) if isinstance(n, ast.Call) and _dotted(n.func) == "run_child"]
    envs = [kw.value for call in run_calls for kw in call.keywords if kw.arg == "env"]
    assert envs and all(isinstance(e, ast.Call) and _dotted(e.func) == "children.skill_environment" for e in envs)
    child_main = _function("skillshelf.execution._child", "main")
    first = child_main.body[0]
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Call)
    assert _dotted(first.value.func) == "close_inherited_fds", "a skill's first act is closing inherited fds"
    workers = _function("skillshelf.server.workers", "run_http_workers")
    guarded = [
        node
        for node in ast.walk(workers)
        if isinstance(node, ast.With)
        and any(
            _dotted(getattr(i.context_expr, "func", i.context_expr)) == "children.helper_environment_only"
            for i in node.items
        )
    ]
    assert guarded and any(
        isinstance(n, ast.Call) and _dotted(n.func) == "Multiprocess" for w in guarded for n in ast.walk(w)
    )


def test_the_helper_environment_holds_what_a_process_needs_and_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSHELF_TOKENS", "ci=token-0123456789abcdef")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-helpers")
    monkeypatch.setenv("PYTHONPATH", "/opt/site")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    helper = children.helper_environment()
    assert "SKILLSHELF_TOKENS" not in helper and "OPENAI_API_KEY" not in helper
    assert helper["PYTHONPATH"] == "/opt/site" and helper["LC_ALL"] == "C.UTF-8" and "PATH" in helper
    server = children.server_environment()
    assert "SKILLSHELF_TOKENS" not in server and server["OPENAI_API_KEY"] == "sk-not-for-helpers"
    skill = children.skill_environment(Path("/w"), Path("/s"), ["OPENAI_API_KEY", "SKILLSHELF_TOKENS"])
    assert skill["OPENAI_API_KEY"] == "sk-not-for-helpers" and "SKILLSHELF_TOKENS" not in skill  # never passed on


def test_a_helper_command_gets_only_fds_0_to_2(tmp_path: Path) -> None:
    listing = "import os; print(' '.join(sorted(os.listdir('/proc/self/fd'))))"
    with (tmp_path / "held").open("w") as kept:
        held = os.dup2(kept.fileno(), 99, inheritable=True)  # even an inheritable one stays behind
        try:
            seen = children.run([sys.executable, "-c", listing], timeout=deadline()).stdout.split()
        finally:
            os.close(held)
    assert "99" not in seen and {"0", "1", "2"} <= set(seen)


@pytest.fixture
def bytecode_library(tmp_path: Path) -> Iterator[tuple[SkillLibrary, Path]]:
    root = tmp_path / "lib"
    three_file(root, "py", "uses-helper", "# uses helper\n\nImports a helper.\n", code=(
        "import sys, os\nsys.path.insert(0, os.path.dirname(__file__))\nimport helper_mod\n"
        "def uses_helper() -> int:\n    return helper_mod.VALUE\n"
    ))  # fmt: skip
    write(root / "py" / "helper_mod.py", "VALUE = 7\n")
    agent_skill(root, "py", "scripted", "name: scripted\ndescription: Runs a script importing a module.")
    write(root / "py" / "scripted" / "scripts" / "main.py", "import json, lib_mod\nprint(json.dumps(lib_mod.VALUE))\n")
    write(root / "py" / "scripted" / "scripts" / "lib_mod.py", "VALUE = 8\n")
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    library.sync()
    yield library, root
    library.close()


@pytest.mark.anyio
async def test_running_skills_without_the_sandbox_writes_no_bytecode_into_the_library(
    bytecode_library: tuple[SkillLibrary, Path],
) -> None:
    library, root = bytecode_library
    unsandboxed = ExecutionSettings(enabled=True, bubblewrap=False, timeout_s=30)
    assert (await service.execute_skill(LibraryReader(library), unsandboxed, "py/uses-helper", {})).output == 7
    assert (
        await service.execute_skill(LibraryReader(library), unsandboxed, "py/scripted", {}, "scripts/main.py")
    ).output == 8
    assert not list(root.rglob("__pycache__")), "a skill run wrote bytecode into the library"


def test_the_redact_hook_imports_the_bundled_skill_without_writing_bytecode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from skillshelf import settings
    from skillshelf.server import hooks

    copy = tmp_path / "bundled"
    shutil.copytree(PATTERNS, copy, ignore=shutil.ignore_patterns("__pycache__", ".skillshelf"))
    monkeypatch.setattr(settings, "bundled_library_path", lambda: copy)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # as a server started without PYTHONDONTWRITEBYTECODE
    redact = hooks._redact_text.__wrapped__()  # past the cache: load it now
    assert redact("password=hunter2hunter2")["count"] >= 1
    assert not list(copy.rglob("__pycache__"))


def test_a_library_file_skillshelf_imports_itself_never_runs_a_planted_pycache_file(tmp_path: Path) -> None:
    """import_without_bytecode (the redact hook's bundled skill) compiles from the source: a `__pycache__`
    file beside it, which no approval or review covers, is neither read nor written."""
    from tests.execution.test_attacks import plant_bytecode

    source = tmp_path / "library" / "redact.py"
    write(source, "VALUE = 'source'\n")
    plant_bytecode(source, "VALUE = 'planted'\n", tmp_path)
    assert children.import_without_bytecode("skillshelf_test_redact", source).VALUE == "source"
