"""Under require_verified (or require_signed) a run executes from a copy of the skill's approved files, made into a
fresh folder of the run's and digested as it was made (docs/security.md, "How a run happens"): a file swapped in
the library after the last check is not what runs, and approved code finds nothing beside the skill's own files
(no dot-folder of its, no `node_modules/` above it, no neighbour in a three-file skill's category folder)."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.execution import service
from skillshelf.execution.runner import run_child
from skillshelf.library.access import approved
from skillshelf.library.access.approved import ApprovalGate
from skillshelf.library.access.reader import LibraryReader, ViewReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.skill.digest import copy_entries
from skillshelf.library.sources.approval import approve
from skillshelf.library.sources.lock import Lock
from skillshelf.settings import ExecutionSettings
from tests.conftest import agent_skill, three_file, write

pytestmark = pytest.mark.anyio

APPROVED_AT = "2026-11-29T09:15:02Z"
MAIN = "scripts/main.py"


def library_of(tmp_path: Path) -> SkillLibrary:
    library = SkillLibrary(LibraryConfig(roots=[tmp_path / "library"], index_dir=tmp_path / "index", watch=False))
    library.sync()
    return library


@pytest.fixture
def gated(tmp_path: Path) -> Iterator[Callable[..., ViewReader]]:
    """`gated(*ids)`: the library under tmp_path/library synced, those ids approved, a require_verified reader."""
    opened: list[SkillLibrary] = []

    def make(*ids: str) -> ViewReader:
        library = library_of(tmp_path)
        opened.append(library)
        approve(tmp_path / "library", Lock(), ids, "ana@example.org", APPROVED_AT)
        return ViewReader(library, (), ApprovalGate(library, verified=True, signed=False))

    yield make
    for library in opened:
        library.close()


def settings(bubblewrap: bool = False) -> ExecutionSettings:
    return ExecutionSettings(enabled=True, timeout_s=20, bubblewrap=bubblewrap)


def tool_skill(root: Path) -> Path:
    """A folder skill whose script reads its own files by relative paths: a module beside it, a data file, a
    relative link to it, an executable helper."""
    skill = agent_skill(root, "run", "tool", "name: tool\ndescription: Reads its own files.").parent
    write(skill / "scripts" / "helper.py", "VALUE = 'approved'\n")
    write(skill / "data" / "value.txt", "data\n")
    (skill / "scripts" / "value.txt").symlink_to(Path("..") / "data" / "value.txt")
    write(skill / "scripts" / "tool.sh", "#!/bin/sh\necho tool\n").chmod(0o755)
    write(
        skill / "scripts" / "main.py",
        "import os\nfrom pathlib import Path\n\nimport helper\n\nhere = Path(__file__).parent\n"
        "print(helper.VALUE, (here / 'value.txt').read_text().strip(), (here.parent / 'data' / 'value.txt')"
        ".read_text().strip(), os.access(here / 'tool.sh', os.X_OK))\n",
    )
    return skill


@pytest.mark.parametrize("bubblewrap", [True, False], ids=["sandbox-if-any", "unsandboxed"])
async def test_an_approved_skill_runs_from_its_copy_with_its_relative_paths(
    tmp_path: Path, gated: Callable[..., ViewReader], bubblewrap: bool
) -> None:
    tool_skill(tmp_path / "library")
    reader = gated("run/tool")
    ran = await service.execute_skill(reader, settings(bubblewrap), "run/tool", {}, script=MAIN)
    assert ran.output.split() == ["approved", "data", "data", "True"]


@pytest.mark.parametrize("when", ["after-the-check", "while-it-is-copied"])
async def test_a_file_swapped_after_the_last_check_is_not_what_runs(
    tmp_path: Path, gated: Callable[..., ViewReader], monkeypatch: pytest.MonkeyPatch, when: str
) -> None:
    """Before, the child read the skill's files from the library after the last check: a swap in that window ran.
    Now the window is simulated at both ends: swapped once the files were checked (the child starts), the copy it
    runs holds the approved bytes; swapped while they are copied, the copy's digest differs and nothing runs."""
    helper = tool_skill(tmp_path / "library") / "scripts" / "helper.py"
    reader = gated("run/tool")

    def swap() -> None:
        helper.write_text("VALUE = 'swapped'\n", encoding="utf-8")

    if when == "after-the-check":

        async def swapped_first(*args: Any, **kwargs: Any) -> Any:
            swap()
            return await run_child(*args, **kwargs)

        monkeypatch.setattr(service, "run_child", swapped_first)
        ran = await service.execute_skill(reader, settings(), "run/tool", {}, script=MAIN)
        assert ran.output.split()[0] == "approved"
        return

    def swapped_while_copying(*args: Any) -> str:
        swap()
        return copy_entries(*args)

    monkeypatch.setattr(approved, "copy_entries", swapped_while_copying)
    with pytest.raises(SkillshelfError) as refused:
        await service.execute_skill(reader, settings(), "run/tool", {}, script=MAIN)
    assert refused.value.code == ErrorCode.PATTERN_NOT_FOUND  # held back, as the gate holds back any change
    held = reader.visibility.held_back("run/tool")
    assert held is not None and "`skillshelf approve run/tool`" in held.message


def dot_folder(root: Path) -> str:
    skill = agent_skill(root, "run", "dotted", "name: dotted\ndescription: Opens a file in its dot-folder.").parent
    write(skill / ".venv" / "x.py", "print('planted')\n")
    write(
        skill / "scripts" / "main.py",
        "from pathlib import Path\n\nplanted = Path(__file__).parents[1] / '.venv' / 'x.py'\n"
        "print(planted.read_text().strip() if planted.exists() else 'missing')\n",
    )
    return "run/dotted"


def node_modules_above(root: Path) -> str:
    skill = agent_skill(root, "run", "required", "name: required\ndescription: Requires a module.").parent
    write(root / "run" / "node_modules" / "helper" / "index.js", "module.exports = 'planted';\n")
    write(
        skill / "scripts" / "main.js",
        "let found = 'missing';\ntry { found = require('helper'); } catch (error) {}\nconsole.log(found);\n",
    )
    return "run/required"


def neighbour(root: Path) -> str:
    code = (
        "import os, sys\n\ndef run(input: dict) -> str:\n    sys.path.insert(0, os.path.dirname(__file__))\n"
        "    try:\n        import helper\n    except ImportError:\n        return 'missing'\n    return helper.VALUE\n"
    )
    three_file(root, "run", "neighbourly", "# neighbourly\n\nImports a module beside it.\n", code=code)
    write(root / "run" / "helper.py", "VALUE = 'planted'\n")  # no skill's: its category's folder is shared
    return "run/neighbourly"


@pytest.mark.parametrize("plant", [dot_folder, node_modules_above, neighbour], ids=lambda f: f.__name__)
async def test_approved_code_finds_nothing_beside_the_skills_own_files(
    tmp_path: Path, gated: Callable[..., ViewReader], plant: Callable[[Path], str]
) -> None:
    """Each loaded bytes no approval covers before (unsandboxed: the sandbox showed the skill's own files only). With
    the gate off a run still executes from the library: nothing is approved, and what it loads is the user's."""
    if plant is node_modules_above and shutil.which("node") is None:
        pytest.skip("node is not installed")
    skill_id = plant(tmp_path / "library")
    reader = gated(skill_id)
    ran = await service.execute_skill(reader, settings(), skill_id, {})
    ungated = await service.execute_skill(LibraryReader(reader.library), settings(), skill_id, {})
    assert str(ran.output).strip() == "missing"
    assert "planted" in str(ungated.output)


async def test_a_skill_over_the_copy_caps_is_refused_naming_them(
    tmp_path: Path, gated: Callable[..., ViewReader], monkeypatch: pytest.MonkeyPatch
) -> None:
    tool_skill(tmp_path / "library")
    reader = gated("run/tool")
    monkeypatch.setattr(approved, "MAX_FILES", 3)
    with pytest.raises(SkillshelfError) as refused:
        await service.execute_skill(reader, settings(), "run/tool", {}, script=MAIN)
    assert refused.value.code == ErrorCode.NOT_EXECUTABLE
    assert "more than 3 files" in refused.value.message and "skillshelf approve run/tool" in refused.value.message


async def test_an_absolute_link_inside_the_skill_is_refused_naming_it(
    tmp_path: Path, gated: Callable[..., ViewReader]
) -> None:
    """It resolves inside the skill, so the gate serves it; in the copy it would lead back to the library."""
    skill = tool_skill(tmp_path / "library")
    (skill / "scripts" / "value.txt").unlink()
    (skill / "scripts" / "value.txt").symlink_to(skill / "data" / "value.txt")
    reader = gated("run/tool")
    with pytest.raises(SkillshelfError) as refused:
        await service.execute_skill(reader, settings(), "run/tool", {}, script=MAIN)
    assert refused.value.code == ErrorCode.NOT_EXECUTABLE
    assert "scripts/value.txt is a link to an absolute path" in refused.value.message
