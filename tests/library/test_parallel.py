"""The multi-process parse path: worker processes parse a large library exactly as the server's own
process does, in order; a failing pool falls back without losing an item; a worker gets none of the
server's secrets."""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

from skillshelf.library import children
from skillshelf.library.index import sync as sync_module
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.indexing import parallel
from tests.conftest import agent_skill, three_file

# What a parsing worker has no use for: the index (SQLite, the vocabulary), pydantic, the usage store.
HEAVY_FOR_A_WORKER = frozenset(
    {
        "skillshelf.library.index.library",
        "skillshelf.library.index.sync",
        "skillshelf.library.index.store",
        "pydantic",
        "skillshelf.library.usage.store",
    }
)


def pid_and_square(item: int, _max_bytes: int) -> tuple[int, int]:
    return os.getpid(), item * item


@pytest.fixture
def force_parallel(monkeypatch: pytest.MonkeyPatch) -> None:
    """Take the worker path even for a small input and on a one-core machine."""
    monkeypatch.setattr(parallel, "PARALLEL_THRESHOLD", 2)
    monkeypatch.setattr(parallel, "CHUNK", 4)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)


@pytest.mark.usefixtures("force_parallel")
def test_workers_parse_in_order_in_other_processes() -> None:
    results = list(parallel.parse_all(pid_and_square, list(range(40)), 0))
    assert [square for _pid, square in results] == [i * i for i in range(40)]
    assert {pid for pid, _square in results} - {os.getpid()}, "nothing was parsed by a worker process"


def library_rows(root: Path, index_dir: Path) -> list[tuple[object, ...]]:
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=index_dir, watch=False))
    try:
        library.sync()
        return sorted((s.id, s.quality, s.tokens, s.summary, s.details.findings) for s in library.index.overview())
    finally:
        library.close()


def test_a_library_indexed_by_workers_equals_one_indexed_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "library"
    for i in range(12):
        three_file(root, f"cat{i % 3}", f"doc-{i}", f"# Doc {i}\n\nHow to do thing {i} with care.\n")
        agent_skill(root, f"cat{i % 3}", f"skill-{i}", f"name: skill-{i}\ndescription: Skill number {i}.")
    (root / "cat0" / "broken").mkdir()
    (root / "cat0" / "broken" / "SKILL.md").write_bytes(b"---\nname: [unclosed\n---\n\xff\xfe body")
    in_process = library_rows(root, tmp_path / "serial")
    monkeypatch.setattr(parallel, "PARALLEL_THRESHOLD", 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    by_workers = library_rows(root, tmp_path / "workers")
    assert len(by_workers) == 25
    assert by_workers == in_process


def test_a_pool_that_cannot_start_falls_back_to_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(parallel, "PARALLEL_THRESHOLD", 2)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)

    def no_processes(*_args: object, **_kwargs: object) -> None:
        raise OSError("no more processes")

    monkeypatch.setattr(children, "popen", no_processes)
    results = list(parallel.parse_all(pid_and_square, list(range(10)), 0))
    assert results == [(os.getpid(), i * i) for i in range(10)]


def exit_in_a_worker(item: int, parent_pid: int) -> tuple[int, int]:
    if item == 13 and os.getpid() != parent_pid:
        os._exit(3)  # a worker dying mid-chunk (killed, out of memory)
    return os.getpid(), item


@pytest.mark.usefixtures("force_parallel")
def test_a_worker_that_dies_mid_parse_loses_no_item() -> None:
    results = list(parallel.parse_all(exit_in_a_worker, list(range(40)), os.getpid()))
    assert [item for _pid, item in results] == list(range(40))
    assert dict(results)[os.getpid()] >= 13  # the rest was parsed here


def environment_of(_item: int, _max_bytes: int) -> dict[str, str]:
    return dict(os.environ)


@pytest.mark.usefixtures("force_parallel")
def test_a_worker_gets_none_of_the_servers_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLSHELF_TOKENS", "ci=token-0123456789abcdef")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "not-for-workers")
    seen = list(parallel.parse_all(environment_of, list(range(4)), 0))
    assert all("SKILLSHELF_TOKENS" not in env and "AWS_SECRET_ACCESS_KEY" not in env for env in seen)
    assert all(env.get("PATH") == os.environ["PATH"] for env in seen)  # what it needs to start is there


def test_a_parsing_worker_imports_the_parser_without_the_index(monkeypatch: pytest.MonkeyPatch) -> None:
    """What a sync hands the workers is pickled by name and imported by each worker as it starts: a parser
    reached through the index's module made every worker import the index, pydantic and the usage store."""
    handed: list[object] = []

    def record(parse: object, items: object, max_bytes: int) -> list[object]:
        handed.append(parse)
        return []

    monkeypatch.setattr(sync_module, "parse_all", record)
    list(sync_module.parse_sources([], 0))
    program = (
        "import pickle, sys; pickle.loads(sys.stdin.buffer.read()); "
        "print(sorted(m for m in sys.modules if m in HEAVY))".replace("HEAVY", repr(HEAVY_FOR_A_WORKER))
    )
    imported = subprocess.run(
        [sys.executable, "-c", program],
        input=pickle.dumps(handed[0]),
        capture_output=True,
        check=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    ).stdout.decode()
    assert imported.strip() == "[]", f"a worker imported {imported.strip()}"
