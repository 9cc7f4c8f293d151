"""Isolation for every test: no real home directory, cache or library is ever touched."""

from __future__ import annotations

import compileall
import inspect
import math
import os
import pickle
import shutil
import stat
import sys
import tempfile
import textwrap
import time
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

import skillshelf
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.locks import file_lock
from skillshelf.library.skill.checker import CheckReport, check_roots

CORPORA = Path(__file__).resolve().parents[1].parent / "shared" / "corpora"


# -- deadlines ----------------------------------------------------------------------------------------
# A test waits for something to happen (a server listening, a change seen, a process gone), never for
# a fixed time; its deadline only turns a hang into a failure. Deadlines are generous, and
# TEST_DEADLINE_SCALE multiplies every one of them for a slow or crowded machine (not SKILLSHELF_*:
# those are the server's settings, where an unknown name is an error).

LIVENESS_S = 60.0  # the default: what no healthy wait comes near, even on a loaded 2-core machine


def deadline_scale(raw: str | None) -> float:
    """TEST_DEADLINE_SCALE's value: 1 when unset; ValueError naming the fix when it is no positive number."""
    if not raw:
        return 1.0
    try:
        scale = float(raw)
    except ValueError:
        scale = math.nan
    if not (math.isfinite(scale) and scale > 0):
        raise ValueError(
            f"TEST_DEADLINE_SCALE={raw!r}: set it to a positive number, the factor for every deadline in the "
            "tests (e.g. 3 on a slow or busy machine), or unset it"
        )
    return scale


try:
    DEADLINE_SCALE, _SCALE_PROBLEM = deadline_scale(os.environ.get("TEST_DEADLINE_SCALE")), None
except ValueError as problem:
    DEADLINE_SCALE, _SCALE_PROBLEM = 1.0, str(problem)


def pytest_configure(config: pytest.Config) -> None:
    if _SCALE_PROBLEM:
        raise pytest.UsageError(_SCALE_PROBLEM)
    folder = memory_temp_folder(os.environ)
    if folder is not None:  # before xdist starts its workers: they, and every process a test starts, inherit it
        os.environ["TMPDIR"] = str(folder)
        tempfile.tempdir = None  # gettempdir() may have been asked already; ask again


# -- temporary folders in memory -----------------------------------------------------------------------
# The suite writes its libraries, indexes, locks and clusters in temporary folders, and the code under test
# fsyncs what it must keep (SQLite, the atomic writer, PostgreSQL): about 13,000 fsyncs a run, ~4 ms each on
# this machine's disk, most of the time the workers sat idle. On a memory filesystem (tmpfs) an fsync returns
# at once and every call still happens. A TMPDIR the developer set is kept as it is.

MEMORY_FILESYSTEM = Path("/dev/shm")
MEMORY_FREE_NEEDED = 4 << 30  # bytes; a run leaves at most one run's folders behind (tmp_path_retention_count)


def memory_temp_folder(environ: Mapping[str, str], memory: Path = MEMORY_FILESYSTEM) -> Path | None:
    """This user's folder on the memory filesystem for the run's temporary folders, made if need be; None to
    leave TMPDIR alone: one is set (by the developer, or by the controller for an xdist worker), there is no
    memory filesystem with room, or the folder there is not this user's own (or others may write in it)."""
    if environ.get("TMPDIR") or not memory.is_dir() or not os.access(memory, os.W_OK | os.X_OK):
        return None
    if shutil.disk_usage(memory).free < MEMORY_FREE_NEEDED:
        return None
    folder = memory / f"skillshelf-tests-{os.getuid()}"
    with suppress(FileExistsError):
        folder.mkdir(mode=0o700)
    info = folder.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o022:
        return None
    folder.chmod(0o711)  # others may pass through, not list: the `postgres` user reaches its cluster's own folder
    return folder


@pytest.hookimpl(wrapper=True)
def pytest_collection(session: pytest.Session) -> Generator[None, object, object]:
    """Collect with bytecode written even under PYTHONDONTWRITEBYTECODE=1: without the test modules'
    rewritten bytecode, every worker rewrites and compiles all of tests/ at every run (7 of its 14 s of
    CPU to collect). Only collection writes (__pycache__ beside each module, as without the variable);
    the tests run under the environment's own setting."""
    previous = sys.dont_write_bytecode
    sys.dont_write_bytecode = False
    try:
        return (yield)
    finally:
        sys.dont_write_bytecode = previous


def pytest_sessionstart() -> None:
    """Write skillshelf's bytecode, every module's, before any test (and, under xdist, before the workers
    start): under PYTHONDONTWRITEBYTECODE=1 nothing else writes it, so every worker and every `skillshelf`
    process the tests start would compile each module that has none, or an outdated one (after an edit or
    a merge), again. Up to date, this is a look at each file's header; a read-only install is left as is."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        compile_package(Path(skillshelf.__file__).parent)


def compile_package(folder: Path) -> None:
    """The bytecode of every module under `folder`, written where imports look for it; a module whose
    bytecode is current is not compiled again."""
    compileall.compile_dir(folder, quiet=2)


def deadline(seconds: float = LIVENESS_S) -> float:
    """The longest a test waits for something before it fails: `seconds` times TEST_DEADLINE_SCALE."""
    return seconds * DEADLINE_SCALE


def wait_until(condition: Callable[[], object], what: str, seconds: float = LIVENESS_S, poll_s: float = 0.02) -> None:
    """Return as soon as `condition()` holds; fail saying `what` did not happen within deadline(seconds)."""
    limit = deadline(seconds)
    end = time.monotonic() + limit
    while not condition():
        if time.monotonic() > end:
            raise AssertionError(f"{what} (waited {limit:.0f} s)")
        time.sleep(poll_s)


async def wait_until_async(
    condition: Callable[[], object | Awaitable[object]], what: str, seconds: float = LIVENESS_S, poll_s: float = 0.02
) -> None:
    """`wait_until` on the event loop; `condition` may be a coroutine function."""
    limit = deadline(seconds)
    end = time.monotonic() + limit
    while True:
        held = condition()
        if inspect.isawaitable(held):
            held = await held
        if held:
            return
        if time.monotonic() > end:
            raise AssertionError(f"{what} (waited {limit:.0f} s)")
        await anyio.sleep(poll_s)


def isolated_variables(home: Path) -> dict[str, str]:
    """The variables that put every per-user folder inside `home` (the tests' own home, never the real one)."""
    variables = {"HOME": str(home), "USERPROFILE": str(home)}
    variables.update({variable: str(home / folder) for variable, folder in USER_FOLDERS.items()})
    variables["SKILLSHELF_CACHE_DIR"] = str(home / ".cache" / "skillshelf")
    variables["SKILLSHELF_STATE_DIR"] = str(home / ".local" / "state" / "skillshelf")  # the call log
    return variables


def isolated_env(home: Path) -> dict[str, str]:
    """os.environ as `isolated_environment` makes it, for a process a module- or session-scoped fixture
    starts (those outlive one test's monkeypatch): no SKILLSHELF_* variable, every per-user folder in `home`."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith("SKILLSHELF_")}
    return {**kept, **isolated_variables(home)}


@pytest.fixture(scope="session")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder of every test's home. `mktemp` lists the whole base folder to number a new one, so one per
    test there cost a scan of thousands of entries each (quadratic: seconds of CPU per xdist worker)."""
    return tmp_path_factory.mktemp("homes")


@pytest.fixture(autouse=True)
def isolated_environment(homes: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = Path(tempfile.mkdtemp(prefix="home", dir=homes))
    # A developer's own configuration must not leak into the tests: no SKILLSHELF_* variable at
    # all (config file, tokens, library, limits, ...), and every per-user folder inside `home`.
    for name in [n for n in os.environ if n.startswith("SKILLSHELF_")]:
        monkeypatch.delenv(name)
    for name, value in isolated_variables(home).items():
        monkeypatch.setenv(name, value)
    return home


# Where platformdirs and our own code look for per-user config, cache, data and state.
USER_FOLDERS = {
    "XDG_CONFIG_HOME": ".config",
    "XDG_CACHE_HOME": ".cache",
    "XDG_DATA_HOME": ".local/share",
    "XDG_STATE_HOME": ".local/state",
    "XDG_RUNTIME_DIR": ".runtime",
    "APPDATA": "AppData/Roaming",
    "LOCALAPPDATA": "AppData/Local",
}


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


async def call(client: Client, tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
    """Call a tool; (isError, the envelope). Every tool returns the envelope as structured content."""
    result = await client.call_tool(tool, arguments)
    assert result.structured_content is not None
    return result.is_error, result.structured_content


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return path


def three_file(
    root: Path, category: str, name: str, doc: str, code: str | None = None, meta: str | None = None
) -> None:
    write(root / category / f"{name}.md", doc)
    if code is not None:
        write(root / category / f"{name}.py", code)
    if meta is not None:
        write(root / category / f"{name}-SKILL.md", meta)


def agent_skill(root: Path, category: str, name: str, frontmatter: str, body: str = "# Body\n\nSteps.\n") -> Path:
    text = f"---\n{textwrap.dedent(frontmatter).strip()}\n---\n{textwrap.dedent(body)}"
    return write(root / category / name / "SKILL.md", text)


@pytest.fixture
def sample_root(tmp_path: Path) -> Path:
    """A small library in both layouts with known answers."""
    return write_sample_library(tmp_path / "library")


@pytest.fixture(scope="module")
def shared_sample_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`sample_root` once per module, for a module-scoped server that its tests only read from."""
    return write_sample_library(tmp_path_factory.mktemp("shared") / "library")


def write_sample_library(root: Path) -> Path:
    """`sample_root`'s skills, written into `root`."""
    three_file(
        root,
        "database",
        "rls-policy",
        """
        # Row Level Security Policy

        Generate PostgreSQL row level security policies so each tenant only sees its own rows.

        ## When to use

        Use when a multi-tenant table must be isolated per tenant.

        ## Example

        ```sql
        CREATE POLICY tenant_isolation ON orders USING (tenant_id = current_setting('app.tenant')::uuid);
        ```
        """,
        code="def rls_policy(table: str) -> str:\n    return f'ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;'\n",
        meta="""
        ---
        description: Generate PostgreSQL row level security policies for multi-tenant tables.
        tags: [postgres, security, multi-tenant]
        quality: 8.5
        input_schema:
          type: object
          properties:
            table: {type: string}
          required: [table]
        ---
        """,
    )
    three_file(
        root,
        "python",
        "retry-backoff",
        """
        # Retry With Backoff

        Retry flaky network calls with exponential backoff and jitter.

        ## Steps

        Wrap the call, sleep base * 2**attempt plus jitter, give up after max attempts.
        """,
        meta="""
        # Skill: Retry With Backoff

        **Category:** python
        **Quality Score:** 6.5/10

        ## Quality Breakdown

        | Criterion | Score | Notes |
        |-----------|-------|-------|
        | Correctness | 7/10 | fine |
        | Reusability | 6/10 | fine |
        | Documentation | 7/10 | fine |
        | Test Coverage | 6/10 | few tests |
        | Performance | 7/10 | fine |
        """,
    )
    three_file(
        root,
        "python",
        "slugify",
        """
        # Slugify

        Turn any title into a URL slug of lowercase ascii words joined by hyphens.
        """,
    )
    agent_skill(
        root,
        "git",
        "release-notes",
        """
        name: release-notes
        description: Draft release notes from merged pull requests and conventional commits. Use when cutting a release.
        metadata:
          tags: "git, release"
        """,
        "# Release notes\n\n## Steps\n\n1. List merged pull requests since the last tag.\n",
    )
    write(root / "git" / "release-notes" / "scripts" / "collect.sh", "#!/bin/sh\necho '{}'\n")
    return root


@pytest.fixture(scope="session")
def corpus_report(tmp_path_factory: pytest.TempPathFactory) -> CheckReport:
    """`check` over ../shared/corpora, once per run (4 s): tests/test_corpora.py and
    tests/library/test_duplicates.py only read it. Pickled by the first worker, loaded by the others."""
    if not CORPORA.is_dir():
        pytest.skip(f"corpora not found at {CORPORA} (read-only shared data)")

    def save(path: Path) -> None:
        path.write_bytes(pickle.dumps(check_roots([CORPORA])))

    report: CheckReport = pickle.loads(built_once(tmp_path_factory, "corpus-report.pickle", save).read_bytes())
    return report


def built_once(factory: pytest.TempPathFactory, name: str, build: Callable[[Path], object]) -> Path:
    """`name` in the run's own temporary folder, made by `build(path)` in the first xdist worker that asks
    for it and only read after that, by every worker (a test that writes copies it first): seconds of
    generation paid once per run instead of once per worker. The folder is new each run, so nothing
    built by an older version of the code is ever reused."""
    base = factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base  # the workers' basetemps' parent
    target = shared / name
    with file_lock(shared / f"{name}.lock"):
        if not target.exists():
            staging = Path(tempfile.mkdtemp(prefix=f"{name}.", dir=shared))
            build(staging / name)
            (staging / name).rename(target)  # complete or absent: a worker never sees half of it
    return target


def generated_library(factory: pytest.TempPathFactory, count: int) -> Path:
    """`count` skills of bench/generate.py (seed 3), built once per run (`built_once`): the same library
    for every test that asks for that size, which only reads it."""
    from bench.generate import generate

    return built_once(factory, f"generated-{count}", lambda out: generate(out, count, seed=3, n_queries=10))


@contextmanager
def synced_library(root: Path, index_dir: Path) -> Iterator[SkillLibrary]:
    """A library of `root` indexed into `index_dir` (no watcher), closed at the end of the block."""
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=index_dir, watch=False))
    try:
        library.sync()
        yield library
    finally:
        library.close()


@pytest.fixture
def sample_library(sample_root: Path, tmp_path: Path) -> Iterator[SkillLibrary]:
    with synced_library(sample_root, tmp_path / "index") as library:
        yield library


def serving(tools: list[Any], name: str = "test") -> Any:
    """An MCP server answering `tools` the way skillshelf serves a view's tools (server/views.py `LiveView`:
    argument errors are VALIDATION_ERROR envelopes), without the rest of a view: for one module's tools."""
    from mcp.server.lowlevel.server import Server
    from mcp.server.subscriptions import InMemorySubscriptionBus

    from skillshelf.config.views import ViewSettings
    from skillshelf.server.views import LiveView, ToolSelection

    view = ViewSettings(output_schemas=True)  # as the full view: every tool with its output schema
    live = LiveView(ToolSelection.of(name, view, tools), InMemorySubscriptionBus())
    server: Server[Any] = Server(name)
    server.middleware.append(live.middleware)
    live.serve(server)
    return server
