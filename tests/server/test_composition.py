"""The composition root (server/app.py `App`): each part made once, shared by every server, closed by the
App that made it; a library command opens the library through it without importing MCP."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from mcp import Client

from skillshelf.config.call_log import CallLogSettings
from skillshelf.errors import SkillshelfError
from skillshelf.library.index.library import SkillLibrary
from skillshelf.server.app import App
from skillshelf.settings import Settings
from tests.conftest import LIVENESS_S, call

SRC = Path(__file__).resolve().parents[2] / "src"


def settings_of(root: Path, tmp_path: Path, **extra: object) -> Settings:
    return Settings(roots=[root], cache_dir=tmp_path / "cache", project_roots=[tmp_path], watch=False, **extra)


def test_every_view_server_shares_the_apps_one_library_and_call_log(sample_root: Path, tmp_path: Path) -> None:
    settings = settings_of(sample_root, tmp_path, view="full", call_log=CallLogSettings(enabled=True))
    with App(settings) as app:
        servers = app.view_servers()
        assert servers["default"] is servers["full"]  # `/mcp` serves the view the settings serve
        assert set(servers) == {*app.views(), "default"}
        assert app.library is app.library and app.call_log is app.call_log is not None
        assert app.reader("agent") is app.reader("agent") and app.reader() is app.reader() is not app.curator


@pytest.mark.anyio
async def test_a_server_of_the_app_reads_the_apps_library(sample_root: Path, tmp_path: Path) -> None:
    with App(settings_of(sample_root, tmp_path)) as app:
        async with Client(app.server("full")) as client:
            failed, answer = await call(client, "searchPatterns", {"query": "release notes"})
        assert not failed and answer["data"]["hits"]
        assert app.library.index.count() == app.curator.count()  # still open: the App, not the server, owns it


def test_closing_an_app_closes_what_it_made_and_not_what_it_was_given(
    sample_root: Path, sample_library: SkillLibrary, tmp_path: Path
) -> None:
    app = App(settings_of(sample_root, tmp_path), library=sample_library)
    archive = app.archive  # made by the App
    before = sample_library.index.count()
    app.close()
    app.close()  # twice is harmless
    assert sample_library.index.count() == before  # the caller's library is still open
    with pytest.raises(sqlite3.ProgrammingError):
        archive.index.count()


def test_an_unknown_view_is_refused_naming_the_views(sample_root: Path, tmp_path: Path) -> None:
    with App(settings_of(sample_root, tmp_path)) as app:
        for ask in (lambda: app.reader("nope"), lambda: app.server("nope")):
            with pytest.raises(SkillshelfError, match=r"no view 'nope'; views: .*agent"):
                ask()


def test_a_library_command_opens_the_library_through_the_root_without_importing_mcp(
    sample_root: Path, tmp_path: Path
) -> None:
    code = (
        "import sys\n"
        "from skillshelf.cli.main import cli\n"
        "try:\n"
        "    cli(['categories', '--library', sys.argv[1]])\n"
        "except SystemExit as end:\n"
        "    assert not end.code, end.code\n"
        "assert 'skillshelf.server.app' in sys.modules, 'the root opened nothing'\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'starlette', 'uvicorn')), file=sys.stderr)\n"
    )
    assert last_line_printed(code, sample_root) == "[]"


def test_a_server_over_stdio_imports_no_web_view(sample_root: Path, tmp_path: Path) -> None:
    """The web view (Jinja2, its pages and charts) is served only over HTTP: a `serve` over stdio, which
    clients start often and wait for, does not import it (about a tenth of its imports)."""
    code = (
        "import sys\n"
        "from skillshelf.cli.main import cli\n"
        "try:\n"
        "    cli(['serve', '--no-watch', '--library', sys.argv[1]])\n"
        "except SystemExit as end:\n"
        "    assert not end.code, end.code\n"
        "assert 'skillshelf.server.assembly' in sys.modules, 'no server was built'\n"
        "print(sorted(m for m in sys.modules if {'jinja2', 'web'} & {*m.split('.')}), file=sys.stderr)\n"
    )
    assert last_line_printed(code, sample_root) == "[]"


def last_line_printed(code: str, library: Path) -> str:
    """The last line `code` prints to stderr, run in a fresh Python with `library` as its argument and no
    input (a stdio server ends at once); fails with its stderr when it exits non-zero."""
    done = subprocess.run(
        [sys.executable, "-c", code, str(library)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        timeout=LIVENESS_S,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stderr.strip().splitlines()[-1]
