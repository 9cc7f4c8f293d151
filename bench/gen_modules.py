"""Deterministic inputs for bench/run_modules.py: a one-skill library, a notes file, a session-artifacts tree.

    python bench/gen_modules.py --out /tmp/skillshelf-bench-modules [--seed 7] [--check]

- `lib-noop/`: one three-file skill, `bench/noop` (`noop.md`, `noop.py` defining `noop(x)`).
- `memory-root/app/.agent-memory/session-notes.jsonl`: 10,000 notes of the four types, with tags.
- `artifacts-root/<project>/.agent-artifacts/`: 5,000 sessions over 50 projects, in both layouts
  (`<sessionId>/session-summary.md`, flat `<sessionId>.md`), some with `compression-metrics.json`.
  `artifacts.queries.json` beside the tree holds the manifest and 200 searchArtifacts queries, each
  with the one session that answers it (checked against an inverted index, as in generate.py).

Prose comes from bench/vocab.py through generate.py's Writer, so sessions overlap in vocabulary the
way a real archive does. The same seed always gives byte-identical files.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from random import Random
from typing import Any

try:  # imported as bench.gen_modules (repo root on sys.path)
    from bench import generate, vocab
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import generate  # type: ignore[no-redef,import-not-found,unused-ignore]
    import vocab  # type: ignore[no-redef,import-not-found,unused-ignore]

GENERATOR = "skillshelf-bench-modules"
GENERATOR_VERSION = 1
NOTE_TYPES = ("decision", "hypothesis", "blocker", "general")
NOTE_TYPE_WEIGHTS = (0.3, 0.2, 0.1, 0.4)
MEMORY_PROJECT = "app"
FLAT_SHARE = 0.25  # sessions written as a flat <sessionId>.md
METRICS_SHARE = 0.40  # of folder sessions: the ones with compression-metrics.json
MIN_QUERY_WORDS, MAX_QUERY_WORDS = 3, 5
FIRST_DAY, LAST_DAY = dt.date(2024, 9, 2), dt.date(2025, 12, 12)
PROJECT_SUFFIXES = ["api", "web", "service", "worker", "cli", "infra", "app", "platform", "sdk", "pipeline"]


def log(msg: str) -> None:
    print(f"[gen-modules] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- the noop library

NOOP_MD = """# Bench noop

A trivial skill for timing executeSkill: it returns its input unchanged.

## Usage

Call `noop(x)` with an integer; the result is `{"x": x}`.
"""
NOOP_PY = '''"""Return the input: the cheapest possible skill run."""


def noop(x: int = 0) -> dict:
    return {"x": x}
'''


def write_noop_library(lib: Path) -> Path:
    """LIB/bench/noop.md and noop.py (rewritten every time: two small files)."""
    folder = lib / "bench"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "noop.md").write_text(NOOP_MD, encoding="utf-8")
    (folder / "noop.py").write_text(NOOP_PY, encoding="utf-8")
    return lib


# --------------------------------------------------------------------------- prose helpers


def writer_for(rng: Random, category: str, index: int) -> generate.Writer:
    """generate.py's Writer, over a fresh concept of `category` (the spec is only a carrier)."""
    concept = generate.make_concept(rng, category)
    spec = generate.SkillSpec(index, category, f"s{index}", False, concept, None, False)
    return generate.Writer(spec, rng)


def fill_all(w: generate.Writer, templates: list[str], k: int) -> list[str]:
    return [w.fill(t) for t in w.rng.sample(templates, k)]


# --------------------------------------------------------------------------- memory notes

# fmt: off
NOTE_TEMPLATES: dict[str, list[str]] = {
    "decision": [
        "Use {tech} for the {obj}: {d} covers {concern} without a new {noun}.",
        "Decided to {a} the {obj} in the {noun} rather than in {tech2}; {d2} is easier to test there.",
        "Keep the {obj} on {tech}. Moving it now would reopen {concern} and we have no {noun2} for it.",
        "Going with {d} over {d2} for the {tech} {obj}, because {outcome}.",
        "Adopt a {adj} {noun} in front of the {obj}; revisit once {tech2} supports {d}.",
    ],
    "hypothesis": [
        "The {concern} we see on the {tech} {obj} might come from {d}.",
        "Maybe {a2} the {obj2} first would avoid {d2} entirely.",
        "If {d} is the cause, the {noun2} should show it within a day.",
        "Suspect the {tech2} client: it may {a} the {obj} twice under {concern}.",
    ],
    "blocker": [
        "Blocked: cannot {a} the {obj} until {tech} is upgraded; {d} fails in CI.",
        "Waiting on access to the {tech2} {noun} before touching the {obj2}.",
        "The {noun} keeps timing out on {d}; {concern} work is stuck until it is fixed.",
    ],
    "general": [
        "{tech} already handles {d} for the {obj}; no custom code needed.",
        "Paired on {concern} for the {obj}; {outcome} after the change.",
        "Reminder: the {noun} owner wants a {adj} {obj} before we {a2} anything.",
        "Read up on {d2}. Useful background for the {tech2} {obj2} later.",
        "Benchmarked the {obj} with {tech}: the {noun2} looks {adj} now.",
    ],
}
# fmt: on


def note_record(i: int, rng: Random, when: dt.datetime) -> dict[str, Any]:
    category = rng.choice(list(vocab.CATEGORIES))
    w = writer_for(rng, category, i)
    note_type = rng.choices(NOTE_TYPES, NOTE_TYPE_WEIGHTS)[0]
    content = " ".join(fill_all(w, NOTE_TEMPLATES[note_type], rng.choice([1, 1, 1, 2])))
    c = w.c
    tags = rng.sample(
        [generate.slug(c.tech), generate.slug(c.concern), generate.slug(c.obj), category], rng.randint(0, 3)
    )
    stamp = when.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {
        "type": note_type,
        "content": content,
        "timestamp": stamp,
        "id": f"{rng.getrandbits(48):012x}",
        "tags": tags,
    }


def write_notes(root: Path, n: int, seed: int) -> dict[str, Any]:
    """ROOT/app/.agent-memory/session-notes.jsonl with N notes, oldest first (always rewritten: addNote grows it)."""
    if root.exists():
        shutil.rmtree(root)
    folder = root / MEMORY_PROJECT / ".agent-memory"
    folder.mkdir(parents=True)
    rng = Random(f"{seed}:notes")
    when = dt.datetime(2025, 1, 6, 9, 0, tzinfo=dt.UTC)
    notes = []
    for i in range(n):
        when += dt.timedelta(minutes=rng.randint(1, 50), seconds=rng.randint(0, 59))
        notes.append(note_record(i, rng, when))
    path = folder / "session-notes.jsonl"
    path.write_text("".join(json.dumps(note) + "\n" for note in notes), encoding="utf-8")
    query = notes_query(notes)
    return {
        "notes": n,
        "bytes": path.stat().st_size,
        "byType": {t: sum(note["type"] == t for note in notes) for t in NOTE_TYPES},
        "query": query,
        "queryTotal": notes_matching(notes, query),
        "first": notes[0]["timestamp"],
        "last": notes[-1]["timestamp"],
    }


def notes_matching(notes: list[dict[str, Any]], query: str) -> int:
    """What getNotes' `query` should count: every word a substring of the lower-cased content or tags."""
    words = query.lower().split()
    haystacks = ["\n".join([n["content"], *n["tags"]]).lower() for n in notes]
    return sum(all(word in h for word in words) for h in haystacks)


def notes_query(notes: list[dict[str, Any]]) -> str:
    """Two words that match a few dozen notes: the first note's technology and concern (first word)."""
    for note in notes:
        if len(note["tags"]) >= 2:
            words = [note["tags"][0].split("-")[0], note["tags"][1].split("-")[0]]
            if 20 <= notes_matching(notes, " ".join(words)) <= 400:
                return " ".join(words)
    return "cache timeout"


# --------------------------------------------------------------------------- session artifacts

# fmt: off
TITLE_TEMPLATES = [
    "{a} the {tech} {obj}", "{tech} {obj}: {concern}", "Fix {concern} in the {obj}", "{a} {obj} for {concern}",
    "{obj} on {tech}, {d}", "Session: {a} the {obj} ({tech})",
]
SUMMARY_TEMPLATES = [
    "Worked on the {tech} {obj} of the {noun}; the goal was to {a} it without reopening {concern}.",
    "We traced {concern} in the {obj} to {d} and fixed it in the {noun}.",
    "Most of the session went into {d2}, which the {tech2} {obj2} also depends on.",
    "The {adj} fix keeps {d} in one place so that {outcome}.",
    "Compared {d} with {d2} on the {tech} {noun} before choosing.",
    "Left the {obj2} alone for now; it needs its own session.",
    "The {noun} team asked for this after {concern} paged them twice in a week.",
    "By the end the {obj} passed the {noun2} and {d} was documented next to it.",
]
DECISION_TEMPLATES = [
    "Use {d} for the {obj} instead of a custom {noun}.", "Keep {tech} as the {obj} store; {tech2} adds little.",
    "{a} the {obj} once per {noun}, not per request.", "Prefer {d2} over retries in the {noun}: {concern} got worse.",
    "Adopt a {adj} {noun} around the {tech} client.", "Record {concern} metrics on the {obj} from day one.",
    "Do not {a2} the {obj2} in this change; it gets its own review.",
    "Treat {d} as part of the {obj} contract and test it like one.",
]
IMPLEMENTATION_TEMPLATES = [
    "Added a {adj} wrapper that can {a} the {obj} through {tech}.", "Wired {d} into the {noun} behind a flag.",
    "Moved the {obj} logic out of the {noun2} into one module.", "Wrote tests for the {concern} path of the {obj}.",
    "Updated the {tech2} config for the {obj2}.", "Removed the old {noun} code path after the {noun2} passed.",
    "Documented how to {a} the {obj} by hand in the runbook.", "Added {d2} to the {tech} {noun} defaults.",
]
CHALLENGE_TEMPLATES = [
    "{concern} only showed up under load; {d} hid it locally.", "The {tech} docs are wrong about {d2}.",
    "A {tech2} {obj2} kept a stale copy of the {obj}.", "Flaky {noun} runs made {d} hard to verify.",
    "The {noun2} numbers moved between runs, so {concern} was hard to pin down.",
]
NEXT_TEMPLATES = [
    "{a2} the {obj2} the same way.", "Add an alert on {d} for the {obj}.", "Review the {noun} with the {tech2} owners.",
    "Measure {concern} again after a week in production.", "Delete the {adj} shim once {tech} ships {d}.",
]
HEADINGS = {
    "decisions": ["Decisions", "Decisions", "Decisions", "Key Decisions"],
    "implementation": ["Implementation", "Implementation", "Implementation", "What was built"],
    "challenges": ["Challenges", "Challenges", "Challenges", "Problems"],
    "next": ["Next Steps", "Next Steps", "Next Steps", "Follow-ups"],
}
# fmt: on


@dataclass
class Session:
    index: int
    project: str
    session_id: str
    flat: bool
    metrics: bool
    text: str = ""

    @property
    def key(self) -> str:
        return f"{self.project}/{self.session_id}"


def project_names(n: int, rng: Random) -> list[str]:
    objects = sorted({generate.slug(o).split("-")[0] for o in vocab.OBJECTS})
    names: list[str] = []
    while len(names) < n:
        head, tail = rng.choice(objects), rng.choice(PROJECT_SUFFIXES)
        name = f"{head}-{tail}"
        if head != tail and name not in names:
            names.append(name)
    return names


def session_slug(w: generate.Writer) -> str:
    c, r = w.c, w.rng
    parts = r.choice([f"{c.tech} {c.obj}", f"{c.action} {c.obj}", c.obj, f"{c.tech} {c.concern}"])
    return "-".join(generate.slug(parts).split("-")[:3])


def bullet_list(w: generate.Writer, templates: list[str], low: int, high: int, task_box: bool = False) -> str:
    box = "[ ] " if task_box else ""
    return "\n".join(f"- {box}{line}" for line in fill_all(w, templates, w.rng.randint(low, high)))


def session_markdown(w: generate.Writer) -> str:
    r = w.rng
    code = generate.code_block(generate.SkillSpec(0, w.category, "s", False, w.c, None, False), r)
    sections = [
        f"# {w.fill(r.choice(TITLE_TEMPLATES))}",
        " ".join(fill_all(w, SUMMARY_TEMPLATES, r.randint(3, 5))),
        f"## {r.choice(HEADINGS['decisions'])}\n\n{bullet_list(w, DECISION_TEMPLATES, 3, 5)}",
        f"## {r.choice(HEADINGS['implementation'])}\n\n{bullet_list(w, IMPLEMENTATION_TEMPLATES, 3, 6)}\n\n{code}",
        f"## {r.choice(HEADINGS['challenges'])}\n\n{bullet_list(w, CHALLENGE_TEMPLATES, 2, 4)}",
        f"## {r.choice(HEADINGS['next'])}\n\n{bullet_list(w, NEXT_TEMPLATES, 2, 4, task_box=r.random() < 0.5)}",
    ]
    return "\n\n".join(sections) + "\n"


def metrics_json(r: Random) -> str:
    original = r.randint(20_000, 200_000)
    compressed = round(original * r.uniform(0.02, 0.15))
    doc = {"compressionMetrics": {"inputTokens": {"total": original}, "outputArtifacts": {"total": compressed}}}
    return json.dumps(doc, indent=2) + "\n"


def write_session(root: Path, s: Session, markdown: str, r: Random) -> None:
    artifacts = root / s.project / ".agent-artifacts"
    if s.flat:
        artifacts.mkdir(parents=True, exist_ok=True)
        (artifacts / f"{s.session_id}.md").write_text(markdown, encoding="utf-8")
        return
    folder = artifacts / s.session_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "session-summary.md").write_text(markdown, encoding="utf-8")
    if s.metrics:
        (folder / "compression-metrics.json").write_text(metrics_json(r), encoding="utf-8")


def unique_id(day: dt.date, base: str, used: set[str], r: Random) -> str:
    """`2025-11-05-auth-flow`, or `...-flow-3` when that day already has one (and now and then anyway)."""
    k = 1 if r.random() < 0.7 else r.randint(2, 4)
    while True:
        sid = f"{day.isoformat()}-{base}" + (f"-{k}" if k > 1 else "")
        if sid not in used:
            used.add(sid)
            return sid
        k += 1


@dataclass
class Plan:
    sessions: list[Session]
    writers: list[generate.Writer]


def plan_sessions(n: int, n_projects: int, seed: int) -> Plan:
    rng = Random(f"{seed}:artifacts")
    projects = project_names(n_projects, rng)
    weights = [1.0 / (1.0 + 0.04 * i) for i in range(n_projects)]
    homes = {p: rng.sample(list(vocab.CATEGORIES), 2) for p in projects}
    used: dict[str, set[str]] = {p: set() for p in projects}
    span = (LAST_DAY - FIRST_DAY).days
    sessions, writers = [], []
    for i in range(n):
        project = rng.choices(projects, weights)[0]
        category = rng.choice(homes[project]) if rng.random() < 0.7 else rng.choice(list(vocab.CATEGORIES))
        w = writer_for(Random(f"{seed}:session:{i}"), category, i)
        day = FIRST_DAY + dt.timedelta(days=rng.randint(0, span))
        sid = unique_id(day, session_slug(w), used[project], rng)
        flat = rng.random() < FLAT_SHARE
        sessions.append(Session(i, project, sid, flat, not flat and rng.random() < METRICS_SHARE))
        writers.append(w)
    return Plan(sessions, writers)


def build_artifact_queries(plan: Plan, corpus: generate.Corpus, count: int, seed: int) -> list[dict[str, str]]:
    """Queries of 3-5 words whose answer is the only session containing all its words that the answer has."""
    rng = Random(f"{seed}:artifact-queries")
    order = list(range(len(plan.sessions)))
    rng.shuffle(order)
    queries: list[dict[str, str]] = []
    seen: set[str] = set()
    for i in order:
        if len(queries) >= count:
            break
        chosen = draft_artifact_query(plan.writers[i].c, Random(f"{seed}:aq:{i}"), corpus, i)
        if chosen is None:
            continue
        rng.shuffle(chosen)
        text = " ".join(generate.query_words(chosen))
        if text in seen:
            continue
        seen.add(text)
        s = plan.sessions[i]
        queries.append(
            {"id": f"a{len(queries) + 1:04d}", "query": text, "project": s.project, "sessionId": s.session_id}
        )
    return queries


def draft_artifact_query(
    c: generate.Concept, rng: Random, corpus: generate.Corpus, index: int
) -> list[generate.Piece] | None:
    def form(term: str, table: dict[str, list[str]], p: float) -> str:
        syns = table.get(term, [])
        return rng.choice(syns) if syns and rng.random() < p else term

    body = [generate.Piece("detail", d) for d in c.details] + [generate.Piece("concern", c.concern)]
    name = [
        generate.Piece("tech", form(c.tech, vocab.TECHS, 0.25)),
        generate.Piece("object", form(c.obj, vocab.OBJECTS, 0.15)),
        generate.Piece("action", form(c.action, vocab.ACTIONS, 0.3)),
    ]
    chosen = [rng.choice(body), rng.choice(name[:2])]
    spare = [p for p in body + name if p not in chosen]
    rng.shuffle(spare)
    while len(generate.query_words(chosen)) < MIN_QUERY_WORDS and spare:
        chosen.append(spare.pop())
    while generate.ambiguity(chosen, corpus, index) != 1:
        addable = [p for p in spare if len(generate.query_words([*chosen, p])) <= MAX_QUERY_WORDS]
        if not addable:
            return None
        best = min(addable, key=lambda p: generate.ambiguity([*chosen, p], corpus, index))
        chosen.append(best)
        spare.remove(best)
    ok_len = MIN_QUERY_WORDS <= len(generate.query_words(chosen)) <= MAX_QUERY_WORDS
    return chosen if ok_len and len(generate.content_words(chosen, corpus, index)) >= 2 else None


def manifest_path(root: Path) -> Path:
    return root.with_name(root.name + ".queries.json")


def read_artifacts_doc(root: Path) -> dict[str, Any] | None:
    try:
        doc: dict[str, Any] = json.loads(manifest_path(root).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return doc if doc.get("generator") == GENERATOR else None


def generate_artifacts(root: Path, n: int, n_projects: int, seed: int, n_queries: int) -> dict[str, Any]:
    """Write N sessions over N_PROJECTS projects under ROOT (recreated) and ROOT.queries.json; return the doc."""
    started = time.perf_counter()
    if root.exists():
        if any(root.iterdir()) and read_artifacts_doc(root) is None:
            raise SystemExit(f"refusing to overwrite {root}: it exists and was not written by this generator")
        shutil.rmtree(root)
    root.mkdir(parents=True)
    plan = plan_sessions(n, n_projects, seed)
    corpus = generate.Corpus(generate.tracked_vocabulary())
    total = 0
    for s, w in zip(plan.sessions, plan.writers, strict=True):
        markdown = session_markdown(w)
        write_session(root, s, markdown, Random(f"{seed}:metrics:{s.index}"))
        corpus.add(s.index, markdown)
        total += len(markdown.encode())
    queries = build_artifact_queries(plan, corpus, n_queries, seed)
    manifest = {
        "generatorVersion": GENERATOR_VERSION,
        "seed": seed,
        "sessions": n,
        "projects": len({s.project for s in plan.sessions}),
        "flatSessions": sum(s.flat for s in plan.sessions),
        "withMetrics": sum(s.metrics for s in plan.sessions),
        "markdownBytes": total,
        "queries": len(queries),
    }
    per_project: dict[str, list[str]] = {}
    for s in plan.sessions:
        per_project.setdefault(s.project, []).append(s.session_id)
    doc = {"generator": GENERATOR, "manifest": manifest, "queries": queries, "sessions": per_project}
    manifest_path(root).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    log(f"generated {n} sessions in {manifest['projects']} projects in {time.perf_counter() - started:.1f}s -> {root}")
    return doc


def ensure_artifacts(root: Path, n: int, n_projects: int, seed: int, n_queries: int) -> dict[str, Any]:
    """Reuse ROOT when its manifest matches (seed, sizes, generator version); else regenerate it."""
    doc = read_artifacts_doc(root)
    m = (doc or {}).get("manifest", {})
    same = (m.get("generatorVersion"), m.get("seed"), m.get("sessions")) == (GENERATOR_VERSION, seed, n)
    if doc is not None and root.is_dir() and same and m.get("queries", 0) >= n_queries:
        log(f"reusing {root} (seed {seed}, {n} sessions)")
        return doc
    return generate_artifacts(root, n, n_projects, seed, n_queries)


# --------------------------------------------------------------------------- checking


def check_artifacts(root: Path, doc: dict[str, Any]) -> list[str]:
    """Problems in a generated tree: missing sessions, bad ids, query answers that do not exist."""
    problems = []
    for project, ids in doc["sessions"].items():
        artifacts = root / project / ".agent-artifacts"
        problems += [
            f"{project}/{sid}: no summary file"
            for sid in ids
            if not ((artifacts / sid / "session-summary.md").is_file() or (artifacts / f"{sid}.md").is_file())
        ]
        if len(set(ids)) != len(ids):
            problems.append(f"{project}: duplicate session ids")
    known = {(p, s) for p, ids in doc["sessions"].items() for s in ids}
    for q in doc["queries"]:
        if (q["project"], q["sessionId"]) not in known:
            problems.append(f"{q['id']}: answer {q['project']}/{q['sessionId']} not generated")
        if not MIN_QUERY_WORDS <= len(q["query"].split()) <= MAX_QUERY_WORDS:
            problems.append(f"{q['id']}: {len(q['query'].split())} words")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True, help="work directory (never inside the repo)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--notes", type=int, default=10_000)
    ap.add_argument("--sessions", type=int, default=5_000)
    ap.add_argument("--projects", type=int, default=50)
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--check", action="store_true", help="verify the artifacts tree after generating it")
    args = ap.parse_args(argv)
    write_noop_library(args.out / "lib-noop")
    notes = write_notes(args.out / "memory-root", args.notes, args.seed)
    log(f"notes: {json.dumps(notes)}")
    doc = generate_artifacts(args.out / "artifacts-root", args.sessions, args.projects, args.seed, args.queries)
    if not args.check:
        return 0
    problems = check_artifacts(args.out / "artifacts-root", doc)
    for p in problems[:50]:
        print(f"CHECK FAILED: {p}", file=sys.stderr)
    log("check passed" if not problems else f"check failed: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
