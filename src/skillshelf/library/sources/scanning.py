"""What a source would bring, scanned before it lands (`add`, `update`, `sync`): the scanner's findings
(library/skill/scan.py) per skill, and the rule that a high one lands only when accepted by name.

An acceptance is 'RULE:PATH' (PATH inside the source's folder, as the review prints it), given with
`--accept` and recorded on the skill's lock entry (`accepted = [...]`). It is bound to the bytes it was
given for: an update that changes the skill's files asks again; a sync of the same bytes does not.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from skillshelf.library.skill.scan import ScanHit, scan_folder
from skillshelf.library.sources.errors import SourceError
from skillshelf.library.sources.lock import LockedSkill, LockedSource

THREE_FILE_SUFFIXES = ("-SKILL.md", ".md", ".py", ".js", ".ts")
SHOWN = 10  # findings a refusal names one by one


@dataclass(frozen=True)
class Risk:
    skill_id: str
    hit: ScanHit  # its path is inside the source's folder

    @property
    def key(self) -> str:
        """What `--accept` takes for it."""
        return f"{self.hit.rule.id}:{self.hit.path}"

    @property
    def high(self) -> bool:
        return self.hit.severity == "high"

    def line(self) -> str:
        return f"{self.hit.severity} {self.hit.location}: {self.hit.text} [{self.hit.rule.id}]"

    def to_dict(self) -> dict[str, object]:
        return {**self.hit.to_dict(), "skill": self.skill_id, "accept": self.key}


def scan_staged(folder: Path, entry: LockedSource) -> list[Risk]:
    """Every finding in the skills of a source's (staged) folder, highest risk first; files of the source
    that belong to no skill (its license) are not a skill's and not scanned."""
    owners = {skill.path.rsplit("/", 1)[-1]: skill.id for skill in entry.skills}
    risks = []
    for hit in scan_folder(folder).hits:
        owner = _owner(hit.path, owners)
        if owner is not None:
            risks.append(Risk(owner, hit))
    order = {"high": 0, "medium": 1, "low": 2}
    return sorted(risks, key=lambda r: (order[r.hit.severity], r.hit.path, r.hit.line or 0))


def _owner(path: str, owners: dict[str, str]) -> str | None:
    first = path.split("/", 1)[0]
    if "/" in path:
        return owners.get(first)
    for suffix in THREE_FILE_SUFFIXES:  # a three-file skill: name.md, name.py, name-SKILL.md beside it
        if first.endswith(suffix) and first[: -len(suffix)] + ".md" in owners:
            return owners[first[: -len(suffix)] + ".md"]
    return None


def accept(
    entry: LockedSource, risks: list[Risk], given: tuple[str, ...], previous: LockedSource | None
) -> LockedSource:
    """`entry` with each skill's accepted high findings recorded; SourceError (naming each finding and the
    `--accept` that takes it) when a high one is not accepted. A previous acceptance holds while the
    skill's bytes are the ones it was given for."""
    kept = set(given)
    for skill in previous.skills if previous else ():
        now = entry.skill(skill.id)
        if now is not None and now.digest == skill.digest:
            kept.update(skill.accepted)
    high = [risk for risk in risks if risk.high]
    refused = [risk for risk in high if risk.key not in kept]
    if refused:
        raise SourceError(refusal(entry.name, refused))
    taken: dict[str, set[str]] = {}
    for risk in high:
        taken.setdefault(risk.skill_id, set()).add(risk.key)
    skills = tuple(_with(skill, taken.get(skill.id, set())) for skill in entry.skills)
    return replace(entry, skills=skills)


def _with(skill: LockedSkill, accepted: set[str]) -> LockedSkill:
    return replace(skill, accepted=tuple(sorted(accepted)))


def refusal(name: str, refused: list[Risk]) -> str:
    shown = [f"  {risk.line()}" for risk in refused[:SHOWN]]
    if len(refused) > SHOWN:
        shown.append(f"  ... and {len(refused) - SHOWN} more")
    flags = " ".join(f"--accept {risk.key}" for risk in refused)
    return "\n".join(
        [
            f"{name}: {len(refused)} high-risk scan finding(s) not accepted; nothing was changed:",
            *shown,
            f"Read those files first. To take them anyway (recorded in skillshelf.lock for these bytes): {flags}",
        ]
    )
