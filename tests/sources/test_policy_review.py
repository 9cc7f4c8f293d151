"""An update's review flags a skill whose run policy widens: the network, a path, a variable, a longer
limit; listed with the files an agent may run, before anything lands."""

from __future__ import annotations

from pathlib import Path

from skillshelf.library.sources.install import open_shelf
from skillshelf.library.sources.review import Review
from tests.sources.helpers import Repo, add

NARROW = "{network: none, env: [API_HOST], timeout_s: 10}"
WIDE = "{network: any, env: [API_HOST, AWS_SECRET_ACCESS_KEY], read_paths: [/srv/data]}"


def _review(repo: Repo, root: Path) -> Review:
    with open_shelf(root) as shelf:
        prepared = shelf.prepare_update("team")
        assert prepared is not None
        shelf.discard(prepared)
    return prepared.review


def test_a_policy_that_widens_is_flagged_beside_the_runnable_files(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "upstream")
    repo.skill("fetcher", "Fetch a report from the team's API.", policy=NARROW)
    repo.skill("quiet", "Summarise a file.")
    repo.commit("first")
    root = tmp_path / "library"
    root.mkdir()
    add(root, repo.url, name="team")
    repo.skill("fetcher", "Fetch a report from the team's API.", policy=WIDE)
    repo.skill("newcomer", "A new skill that wants the network.", policy="{network: any}")
    repo.skill("quiet", "Summarise a file, shorter.", policy="{network: none}")  # a policy that asks for nothing
    repo.commit("wider")
    review = _review(repo, root)
    lines = review.lines()
    head = lines.index("  ! run policies that widen (what a run of the skill may reach):")
    assert lines[head + 1 : head + 6] == [
        "      team/fetcher: network none -> any",
        "      team/fetcher: reads /srv/data",
        "      team/fetcher: receives $AWS_SECRET_ACCESS_KEY",
        "      team/fetcher: timeout_s 10 -> the configured maximum",
        "      team/newcomer: network none -> any",
    ]
    assert not any("team/quiet:" in line for line in lines)
    assert review.to_dict()["policyWidens"][0] == "team/fetcher: network none -> any"
