"""A skill's run policy (frontmatter `policy:`), enforced for real: bubblewrap shares the network only with
a skill that declares it and is allowed it, binds only the read paths it is granted, and the environment
holds only the variables it is granted; a policy that asks for more than the configuration or the view
allows, or that cannot be read, is refused before anything runs.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from pydantic import ValidationError

from skillshelf.config.execution_cap import ExecutionCap
from skillshelf.config.views import ViewSettings
from skillshelf.errors import ErrorCode, SkillshelfError
from skillshelf.execution import service
from skillshelf.library import children
from skillshelf.library.access.reader import LibraryReader
from skillshelf.library.index.library import LibraryConfig, SkillLibrary
from skillshelf.library.skill.policy import PolicyError, SkillPolicy, policy_of
from skillshelf.server.app import build_server
from skillshelf.settings import ExecutionSettings, Settings
from tests.conftest import three_file
from tests.execution.test_attacks import needs_bubblewrap

pytestmark = pytest.mark.anyio

CONNECT = (
    "import socket\n"
    "def {name}(port: int) -> dict:\n"
    "    try:\n"
    "        with socket.create_connection(('127.0.0.1', port), timeout=3):\n"
    "            return {{'connected': True}}\n"
    "    except OSError as exc:\n"
    "        return {{'error': type(exc).__name__}}\n"
)
ENVIRON = (
    "import os\ndef {name}() -> dict:\n    return {{k: v for k, v in os.environ.items() if k.startswith('POLICY_')}}\n"
)
READ = (
    "from pathlib import Path\n"
    "def {name}(path: str) -> dict:\n"
    "    try:\n"
    "        return {{'read': Path(path).read_text()}}\n"
    "    except OSError as exc:\n"
    "        return {{'error': type(exc).__name__}}\n"
)
TOUCH = "from pathlib import Path\ndef {name}(path: str) -> str:\n    Path(path).write_text('ran')\n    return 'ran'\n"
HOG = "def {name}(mb: int) -> int:\n    return len(bytearray(mb * 1024 * 1024))\n"
SKILLS = {
    "offline": ("network: none", CONNECT),
    "online": ("network: any", CONNECT),
    "plain-connect": (None, CONNECT),
    "env-one": ("env: [POLICY_GRANTED]", ENVIRON),
    "env-plain": (None, ENVIRON),
    "reader": ("read_paths: [{data}]", READ),
    "typo": ("netwrok: any", TOUCH),
    "greedy": ("network: any", TOUCH),
    "slow": ("timeout_s: 2\n  memory_mb: 100", HOG),
    "big": ("memory_mb: 4096", TOUCH),
    "spin": ("timeout_s: 1", "def {name}() -> None:\n    while True:\n        pass\n"),
}
SANDBOXED = ExecutionSettings(enabled=True, timeout_s=20, memory_mb=256, max_processes=16)


def _function(name: str) -> str:
    return name.replace("-", "_")


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    """A folder the configuration lets skills ask to read, and a secret beside it that nobody granted."""
    allowed = tmp_path / "shared" / "data"
    allowed.mkdir(parents=True)
    (allowed / "table.csv").write_text("a,b\n1,2\n", encoding="utf-8")
    (tmp_path / "shared" / "secret.txt").write_text("not granted", encoding="utf-8")
    return allowed


@pytest.fixture
def policy_library(tmp_path: Path, data_dir: Path) -> Iterator[SkillLibrary]:
    root = tmp_path / "policylib"
    for name, (policy, code) in SKILLS.items():
        front = f"---\npolicy:\n  {policy.format(data=data_dir)}\n---\n" if policy else ""
        three_file(
            root, "pol", name, f"{front}# {name}\n\nA skill with a policy.\n", code=code.format(name=_function(name))
        )
    library = SkillLibrary(LibraryConfig(roots=[root], index_dir=tmp_path / "idx", watch=False))
    library.sync()
    yield library
    library.close()


@pytest.fixture
def listener() -> Iterator[socket.socket]:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        server.listen(4)
        yield server


async def run(
    library: SkillLibrary,
    settings: ExecutionSettings,
    skill: str,
    payload: dict[str, Any],
    cap: ExecutionCap | None = None,
) -> Any:
    return await service.execute_skill(LibraryReader(library), settings, f"pol/{skill}", payload, cap=cap)


# The declaration: one parser, a clear error naming the key.


def test_a_policy_with_an_unknown_key_names_it_and_the_keys_there_are() -> None:
    with pytest.raises(PolicyError, match=r"unknown key\(s\) 'netwrok'; the keys are network, read_paths, env"):
        policy_of({"policy": {"netwrok": "any"}})


@pytest.mark.parametrize(
    ("raw", "named"),
    [
        ({"network": "loopback"}, "policy.network is 'loopback'"),
        ({"network": True}, "policy.network is True"),
        ({"read_paths": ["data"]}, "is not absolute"),
        ({"read_paths": ["/srv/../etc"]}, "'..' component"),
        ({"read_paths": ["/"]}, "the whole file system"),
        ({"read_paths": "/srv"}, "policy.read_paths must be a list"),
        ({"env": ["HOME"]}, "policy.env: HOME is set by skillshelf"),
        ({"env": ["PYTHONPYCACHEPREFIX"]}, "policy.env: PYTHONPYCACHEPREFIX is set by skillshelf"),
        ({"env": ["SKILLSHELF_DATABASE_URL"]}, "configures the server"),
        ({"env": ["A-B"]}, "not a variable name"),
        ({"timeout_s": 0}, "policy.timeout_s is 0"),
        ({"timeout_s": "10"}, "policy.timeout_s is '10'"),
        ({"memory_mb": 8}, "policy.memory_mb is 8"),
        ({"memory_mb": 1.5}, "policy.memory_mb is 1.5"),
    ],
)
def test_a_bad_policy_value_is_an_error_naming_the_key(raw: dict[str, Any], named: str) -> None:
    with pytest.raises(PolicyError, match=named.replace("(", r"\(").replace(".", r"\.")):
        policy_of({"policy": raw})


def test_a_skill_without_a_policy_declares_nothing_and_one_with_a_policy_gets_its_values() -> None:
    assert policy_of({}) == SkillPolicy(declared=False)
    declared = policy_of(
        {"policy": {"network": "any", "env": ["A", "A"], "read_paths": ["/srv/data/"], "timeout_s": 5}}
    )
    assert declared == SkillPolicy(True, "any", ("/srv/data",), ("A",), 5.0, None)


def test_what_a_new_policy_asks_beyond_the_old_one_is_named() -> None:
    old = SkillPolicy(True, "none", ("/srv/a",), ("A",), 10.0, 256)
    new = SkillPolicy(True, "any", ("/srv/a", "/srv/b"), ("A", "B"), None, 128)
    assert new.widens(old) == [
        "network none -> any",
        "reads /srv/b",
        "receives $B",
        "timeout_s 10 -> the configured maximum",
    ]
    assert old.widens(new) == ["memory_mb 128 -> 256"]
    assert SkillPolicy().widens(old) == ["its policy is gone: it runs with what the configuration gives every skill"]


def test_check_reports_an_unknown_policy_key_as_an_error(policy_library: SkillLibrary) -> None:
    skill = policy_library.find("pol/typo")
    found = [f for f in skill.details.findings if f["code"] == "policy-invalid"]
    assert len(found) == 1 and found[0]["severity"] == "error" and "'netwrok'" in found[0]["message"]


@pytest.mark.parametrize(
    ("cap", "named"),
    [
        ({"netwrok": "none"}, "execution.netwrok"),
        ({"read_paths": ["data"]}, "'data' is not an absolute path"),
        ({"env": ["A-B"]}, "'A-B' is not an environment variable name"),
    ],
)
def test_a_views_cap_with_an_unknown_key_or_a_bad_value_is_a_config_error(cap: dict[str, Any], named: str) -> None:
    with pytest.raises(ValidationError, match=named):
        ViewSettings.model_validate({"execution": cap})
    with pytest.raises(ValidationError, match="is not an absolute path"):
        ExecutionSettings(read_paths=[Path("relative")])


# Refused before anything runs.


async def test_a_run_with_an_unreadable_policy_is_refused_and_nothing_runs(
    policy_library: SkillLibrary, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    unsandboxed = SANDBOXED.model_copy(update={"bubblewrap": False})  # it could write the marker if it ran
    with pytest.raises(SkillshelfError) as refused:
        await run(policy_library, unsandboxed, "typo", {"path": str(marker)})
    assert refused.value.code == ErrorCode.NOT_EXECUTABLE and "'netwrok'" in refused.value.message
    assert not marker.exists()


async def test_a_policy_asking_for_more_than_allowed_is_refused_before_it_runs(
    policy_library: SkillLibrary, tmp_path: Path
) -> None:
    marker = tmp_path / "ran.txt"
    unsandboxed = SANDBOXED.model_copy(update={"bubblewrap": False})
    with pytest.raises(SkillshelfError) as network:
        await run(policy_library, unsandboxed, "greedy", {"path": str(marker)})
    with pytest.raises(SkillshelfError) as memory:
        await run(policy_library, unsandboxed, "big", {"path": str(marker)})
    assert network.value.code == ErrorCode.EXECUTION_DISABLED
    assert "network any (execution.network does not name it)" in network.value.message
    assert "memory_mb 4096 (execution.memory_mb is 256)" in memory.value.message
    assert not marker.exists()


async def test_the_view_caps_what_the_configuration_allows(policy_library: SkillLibrary, tmp_path: Path) -> None:
    marker = tmp_path / "ran.txt"
    allowed = SANDBOXED.model_copy(update={"network": ["pol/*"], "bubblewrap": False})
    cap = ExecutionCap(network="none", memory_mb=64)
    with pytest.raises(SkillshelfError) as network:
        await run(policy_library, allowed, "greedy", {"path": str(marker)}, cap)
    with pytest.raises(SkillshelfError) as memory:
        await run(policy_library, allowed, "slow", {"mb": 1}, cap)
    assert "network any (the view's cap ([views.NAME.execution]) says none)" in network.value.message
    assert "memory_mb 100 (the view's cap ([views.NAME.execution]) allows 64)" in memory.value.message
    assert not marker.exists()


async def test_a_views_cap_reaches_execute_skill_over_mcp(policy_library: SkillLibrary, tmp_path: Path) -> None:
    capped = ViewSettings(execution=ExecutionCap(network="none"))
    settings = Settings(
        roots=[tmp_path / "policylib"],
        execution=SANDBOXED.model_copy(update={"network": ["pol/*"]}),
        views={"capped": capped},
    )
    server = build_server(settings, policy_library, view="capped")
    async with Client(server) as client:
        result = await client.call_tool(
            "executeSkill", {"skillId": "pol/greedy", "input": {"path": "x"}, "dryRun": True}
        )
        plain = await client.call_tool("executeSkill", {"skillId": "pol/env-plain", "dryRun": True})
    assert result.is_error and result.structured_content is not None
    assert result.structured_content["error"]["code"] == "EXECUTION_DISABLED"
    assert "says none" in result.structured_content["error"]["message"]
    assert plain.structured_content is not None and not plain.is_error
    assert plain.structured_content["data"]["wouldRun"]["policy"] == {
        "declared": False,
        "network": "none",  # execution.network names it, and the view caps it to none
        "readPaths": [],
        "env": [],
    }


# Enforced under bubblewrap.


@needs_bubblewrap
async def test_a_skill_without_network_cannot_connect_and_one_granted_it_can(
    policy_library: SkillLibrary, listener: socket.socket
) -> None:
    port = listener.getsockname()[1]
    allowed = SANDBOXED.model_copy(update={"network": ["pol/*"]})
    offline = await run(policy_library, allowed, "offline", {"port": port})  # allowed, but it declares none
    online = await run(policy_library, allowed, "online", {"port": port})
    assert offline.output == {"error": "ConnectionRefusedError"} and offline.ran.network is False
    assert offline.ran.policy.declared and offline.ran.policy.network == "none"
    assert online.output == {"connected": True} and online.ran.policy.network == "any"


@needs_bubblewrap
async def test_a_skill_granted_a_variable_sees_it_and_no_other(
    policy_library: SkillLibrary, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("POLICY_GRANTED", "granted-value")
    monkeypatch.setenv("POLICY_OTHER", "other-value")  # listed in execution.env, not asked for
    monkeypatch.setenv("POLICY_SERVER_ONLY", "server-value")  # listed nowhere
    settings = SANDBOXED.model_copy(update={"env": ["POLICY_GRANTED", "POLICY_OTHER"]})
    granted = await run(policy_library, settings, "env-one", {})
    legacy = await run(policy_library, settings, "env-plain", {})
    assert granted.output == {"POLICY_GRANTED": "granted-value"}
    assert granted.ran.policy.env == ["POLICY_GRANTED"]
    assert legacy.output == {"POLICY_GRANTED": "granted-value", "POLICY_OTHER": "other-value"}  # no policy: as before


@needs_bubblewrap
async def test_a_granted_read_path_is_bound_read_only_and_nothing_beside_it(
    policy_library: SkillLibrary, data_dir: Path
) -> None:
    settings = SANDBOXED.model_copy(update={"read_paths": [data_dir.parent]})
    table = await run(policy_library, settings, "reader", {"path": str(data_dir / "table.csv")})
    beside = await run(policy_library, settings, "reader", {"path": str(data_dir.parent / "secret.txt")})
    assert table.output == {"read": "a,b\n1,2\n"} and table.ran.policy.read_paths == [str(data_dir)]
    assert beside.output == {"error": "FileNotFoundError"}
    with pytest.raises(SkillshelfError, match=r"not under a folder of execution\.read_paths"):
        await run(policy_library, SANDBOXED, "reader", {"path": str(data_dir / "table.csv")})


@needs_bubblewrap
async def test_a_declared_time_and_memory_are_the_runs_limits(policy_library: SkillLibrary) -> None:
    dry = service.dry_run(LibraryReader(policy_library), SANDBOXED, "pol/slow", {"mb": 1}, None, None)
    assert dry.would_run.timeout_s == 2 and dry.would_run.memory_mb == 100
    with pytest.raises(SkillshelfError) as over:
        await run(policy_library, SANDBOXED, "slow", {"mb": 150})  # within the configured 256 MB, not its own 100
    assert over.value.code == ErrorCode.SKILL_EXECUTION_FAILED and "MemoryError" in over.value.message
    fits = await run(policy_library, SANDBOXED, "slow", {"mb": 10})
    assert fits.output == 10 * 1024 * 1024 and fits.ran.timeout_s == 2
    with pytest.raises(SkillshelfError) as stopped:
        await run(policy_library, SANDBOXED, "spin", {})  # the configured 20 s would let it spin on
    assert stopped.value.code == ErrorCode.EXECUTION_TIMEOUT and "its 1 s limit" in stopped.value.message


def test_the_servers_own_settings_never_reach_a_skill_even_when_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SKILLSHELF_DATABASE_URL", "postgresql://user:password@db/skills")
    env = children.skill_environment(tmp_path, tmp_path / "skill", ["SKILLSHELF_DATABASE_URL", "HOME", "POLICY_UNSET"])
    assert "SKILLSHELF_DATABASE_URL" not in env and env["HOME"] == str(tmp_path) and "POLICY_UNSET" not in env
