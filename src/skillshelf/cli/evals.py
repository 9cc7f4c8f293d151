"""`skillshelf eval`: every skill's trigger examples through the agent's search, and the library's findability."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING
from xml.etree import ElementTree

import click

from skillshelf.cli.common import command_settings, json_option, library_option, opened_app
from skillshelf.cli.output import emit, plural, say
from skillshelf.library.atomic import write_atomically

if TYPE_CHECKING:  # the search stack is imported when `eval` runs, not when any command starts
    from skillshelf.skills.evals import EvalReport

SEARCH_TOOL = "searchPatterns"  # whose pinned arguments (a view's filters) every eval query gets too
SHOWN_LOSSES = 20  # of the queries a skill lost, in the text report


@click.command(name="eval", short_help="Will each skill be found for its tasks? Trigger evals for the library.")
@library_option
@json_option
@click.option("--view", "view_name", help="Search as this view's agent does (its skills and pinned filters).")
@click.option("--junit", type=click.Path(path_type=Path, dir_okay=False), help="Also write JUnit XML here (CI).")
@click.option("--threshold", type=click.FloatRange(0, 1), help="Exit 1 below this share passed (eval_threshold).")
def evaluate(
    libraries: tuple[Path, ...], as_json: bool, view_name: str | None, junit: Path | None, threshold: float | None
) -> None:
    """Run every skill's trigger examples (frontmatter `evals:` or evals/eval_queries.json) through the search
    the agent uses; report ranks, hit@1 and hit@5, should-not queries that pick a skill anyway, skills their
    own description does not find, and colliding pairs. Exits 1 below the threshold."""
    from skillshelf.config.views import resolve_view
    from skillshelf.errors import SkillshelfError

    settings = command_settings(libraries, watch=False)
    try:
        view = resolve_view(view_name, settings.views, settings.execution.enabled) if view_name else None
    except SkillshelfError as exc:
        raise click.UsageError(f"--view: {exc.message}") from None
    wanted = settings.eval_threshold if threshold is None else threshold
    with opened_app(settings) as app:
        if app.library.semantic is not None:
            app.library.semantic.wait_idle(timeout=60)  # rank by meaning as a warm server does
        reader = app.reader(view_name)
        override = view.overrides.get(SEARCH_TOOL) if view is not None else None
        from skillshelf.skills.evals import Pins, run_evals

        report = run_evals(reader, wanted, Pins.of(override.pinned) if override else Pins())
    if junit is not None:
        write_atomically(junit.expanduser(), junit_xml(report))
    emit(report, as_json, render)
    if not report.ok:
        sys.exit(1)


def render(report: EvalReport) -> None:
    for warning in report.warnings or []:
        say(f"note: {warning}", err=True)
    for skill in report.skills:
        hit1 = "-" if skill.hit_at_1 is None else f"{skill.hit_at_1:.0%}"
        hit5 = "-" if skill.hit_at_5 is None else f"{skill.hit_at_5:.0%}"
        say(f"{skill.id}: hit@1 {hit1}, hit@5 {hit5}, {plural(len(skill.queries), 'example')}")
        for problem in skill.problems:
            say(f"  problem: {problem}")
        for query in [q for q in skill.queries if not q.passed][:SHOWN_LOSSES]:
            where = f"rank {query.rank}" if query.rank else "not in the top 10"
            if query.should_trigger:
                say(f"  missed: {query.query!r}: {where}, {query.winner} ranked first")
            else:
                say(f"  picked wrongly: {query.query!r} (should not pick it)")
    found = report.findability
    for lost in found.unreachable:
        where = f"rank {lost.rank}" if lost.rank else "not in the top 10"
        say(f"unreachable: {lost.id}: its own description ranks it {where}; {lost.winner} ranks first")
    for pair in found.collisions:
        first, second = pair.skills
        say(f"collision: {first} <> {second} ({plural(pair.queries, 'query', 'queries')} contested)")
        say(f"  shared: {', '.join(pair.shared_words) or '-'}")
        say(f"  only {first}: {', '.join(pair.only_first) or '-'}; only {second}: {', '.join(pair.only_second) or '-'}")
    hit1 = "-" if report.hit_at_1 is None else f"{report.hit_at_1:.0%}"
    hit5 = "-" if report.hit_at_5 is None else f"{report.hit_at_5:.0%}"
    click.echo(
        f"{report.passed}/{plural(report.examples, 'example')} passed (hit@1 {hit1}, hit@5 {hit5}); "
        f"{found.checked - len(found.unreachable)}/{found.checked} skills found by their own description; "
        f"{plural(len(found.collisions), 'collision')}; score {report.score:.2f} "
        f"({'ok' if report.ok else 'below'} threshold {report.threshold:.2f}); "
        f"{'words and meaning' if report.by_meaning else 'words only'}; {report.seconds:.1f} s"
    )


def junit_xml(report: EvalReport) -> str:
    """One testcase per query (written examples, then each skill's own description), a failure when it
    misses; a collision is a failed testcase of its own."""
    suite = ElementTree.Element("testsuite", name="skillshelf eval")
    cases = 0
    failures = 0
    for skill in report.skills:
        for query in skill.queries:
            kind = "should" if query.should_trigger else "should not"
            case = ElementTree.SubElement(suite, "testcase", classname=skill.id, name=f"{kind}: {query.query}")
            cases += 1
            if not query.passed:
                failures += 1
                place = f"rank {query.rank}" if query.rank else "not in the top 10"
                message = f"{place}; {query.winner} ranked first" if query.should_trigger else "ranked first"
                ElementTree.SubElement(case, "failure", message=message)
    unreachable = {u.id: u for u in report.findability.unreachable}
    for skill_id, rank in sorted(report.findability.own_ranks.items()):
        case = ElementTree.SubElement(suite, "testcase", classname=skill_id, name="found by its own description")
        cases += 1
        if skill_id in unreachable:
            where = f"rank {rank}" if rank else "not in the top 10"
            ElementTree.SubElement(case, "failure", message=f"{where}; {unreachable[skill_id].winner} ranked first")
            failures += 1
    for pair in report.findability.collisions:
        case = ElementTree.SubElement(
            suite, "testcase", classname=pair.skills[0], name=f"no collision with {pair.skills[1]}"
        )
        shared = ", ".join(pair.shared_words)
        ElementTree.SubElement(case, "failure", message=f"they contest each other's queries; shared words: {shared}")
        cases, failures = cases + 1, failures + 1
    suite.set("tests", str(cases))
    suite.set("failures", str(failures))
    suite.set("time", f"{report.seconds:.2f}")
    suites = ElementTree.Element("testsuites")
    suites.append(suite)
    return ElementTree.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
