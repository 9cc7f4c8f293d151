"""Generate a deterministic synthetic skill library plus paraphrased queries with known answers.

    python bench/generate.py --n 1000 --out /tmp/skillshelf-bench/lib-1000 [--seed 7] [--check]

Writes the library to OUT (about 70 % three-file skills, 30 % Agent Skills folders, over 40
categories) and OUT.queries.json beside it: the manifest (seed, n, counts) and the queries, each
with the one skill id that answers it. Every query's answer is the only skill in the library whose
text contains all of the query's words that occur in the answer (checked at generation time), yet
no query contains every word of its answer's name; see bench/README.md for how queries are built.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import sys
import time
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from random import Random
from typing import Any

try:  # imported as bench.generate (repo root on sys.path)
    from bench import vocab
except ModuleNotFoundError:  # run as a script: bench/ itself is on sys.path
    import vocab  # type: ignore[no-redef,import-not-found,unused-ignore]

GENERATOR = "skillshelf-bench"
GENERATOR_VERSION = 2
FOLDER_SHARE = 0.30
META_SHARE = 0.30  # of three-file skills: the ones with a <name>-SKILL.md metadata file
MIN_BODY, MAX_BODY = 1000, 5400
MAX_QUERY_WORDS, MIN_QUERY_WORDS = 8, 3
NAME_RE = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")
WORD_RE = re.compile(r"[a-z0-9]+")
STOPWORDS = frozenset(
    {"a", "an", "and", "the", "of", "to", "in", "on", "for", "with", "from", "by", "up", "out", "down", "off"}
    | {"it", "its", "at", "as", "or", "is", "be"}
)


def log(msg: str) -> None:
    print(f"[generate] {msg}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Concept:
    action: str
    tech: str
    obj: str
    concern: str
    details: tuple[str, ...]
    tech2: str
    obj2: str
    action2: str


@dataclass
class SkillSpec:
    index: int
    category: str
    name: str
    folder: bool
    concept: Concept
    quality: float | None
    executable: bool
    title: str = ""
    description: str = ""

    @property
    def id(self) -> str:
        return f"{self.category}/{self.name}"


@dataclass
class Corpus:
    """Per-word posting lists (sorted skill indices) over the tracked concept vocabulary."""

    tracked: frozenset[str]
    postings: dict[str, list[int]] = field(default_factory=dict)

    def add(self, index: int, text: str) -> None:
        for word in sorted(self.tracked & words_of(text)):
            self.postings.setdefault(word, []).append(index)

    def contains(self, index: int, word: str) -> bool:
        plist = self.postings.get(word, [])
        pos = bisect_left(plist, index)
        return pos < len(plist) and plist[pos] == index

    def matching(self, words: list[str]) -> list[int]:
        """Skill indices whose text contains every one of `words` (normalised)."""
        if not words:
            return []
        lists = sorted((self.postings.get(w, []) for w in words), key=len)
        return [i for i in lists[0] if all(self.contains(i, w) for w in words[1:])]


def normalise(word: str) -> str:
    """Lower-case, with a crude plural strip (enough to keep the uniqueness check conservative)."""
    word = word.lower()
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def words_of(text: str) -> set[str]:
    return {normalise(w) for w in WORD_RE.findall(text.lower())}


def tracked_vocabulary() -> frozenset[str]:
    terms: list[str] = []
    for table in (vocab.ACTIONS, vocab.TECHS, vocab.OBJECTS, vocab.CONCERNS):
        for key, values in table.items():
            terms.append(key)
            terms.extend(values)
    return frozenset(w for t in terms for w in words_of(t) if w not in STOPWORDS)


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


# --------------------------------------------------------------------------- choosing skills


def category_weights(rng: Random) -> list[float]:
    """Mildly skewed category sizes, like a real library (a few big categories, a long tail)."""
    names = list(vocab.CATEGORIES)
    order = list(range(len(names)))
    rng.shuffle(order)
    return [1.0 / (1.0 + 0.06 * order[i]) for i in range(len(names))]


def pick(rng: Random, local: list[str], pool: list[str], local_share: float = 0.8) -> str:
    return rng.choice(local) if rng.random() < local_share else rng.choice(pool)


def make_concept(rng: Random, category: str) -> Concept:
    actions, techs, objects = vocab.CATEGORIES[category]
    all_actions, all_techs, all_objects = list(vocab.ACTIONS), list(vocab.TECHS), list(vocab.OBJECTS)
    concern = rng.choice(list(vocab.CONCERNS))
    details = tuple(rng.sample(vocab.CONCERNS[concern], 3))
    tech = pick(rng, techs, all_techs)
    obj = pick(rng, objects, all_objects)
    action = pick(rng, actions, all_actions)
    tech2 = rng.choice([t for t in techs if t != tech] or all_techs)
    obj2 = rng.choice([o for o in objects if o != obj] or all_objects)
    action2 = rng.choice([a for a in actions if a != action] or all_actions)
    return Concept(action, tech, obj, concern, details, tech2, obj2, action2)


def unique_name(concept: Concept, used: set[str]) -> str | None:
    base = f"{slug(concept.action)}-{slug(concept.tech)}-{slug(concept.obj)}"
    for candidate in (base, f"{base}-{slug(concept.concern)}", f"{base}-{slug(concept.details[0])}"):
        if len(candidate) <= 64 and candidate not in used:
            return candidate
    return None


def plan_skills(n: int, seed: int) -> list[SkillSpec]:
    rng = Random(f"{seed}:plan")
    categories = list(vocab.CATEGORIES)
    weights = category_weights(rng)
    used: set[str] = set()
    specs: list[SkillSpec] = []
    while len(specs) < n:
        category = rng.choices(categories, weights)[0]
        concept = make_concept(rng, category)
        name = unique_name(concept, used)
        if name is None:
            continue
        used.add(name)
        folder = rng.random() < FOLDER_SHARE
        quality = round(rng.uniform(4.0, 9.8), 1) if not folder and rng.random() < META_SHARE else None
        executable = rng.random() < (0.4 if folder else 0.5)
        specs.append(SkillSpec(len(specs), category, name, folder, concept, quality, executable))
    return specs


# --------------------------------------------------------------------------- prose


class Writer:
    """Fills sentence templates for one skill, varying word choice between synonyms."""

    def __init__(self, spec: SkillSpec, rng: Random) -> None:
        self.c = spec.concept
        self.rng = rng
        self.category = spec.category

    def form(self, term: str, table: dict[str, list[str]], p_syn: float) -> str:
        syns = table.get(term, [])
        return self.rng.choice(syns) if syns and self.rng.random() < p_syn else term

    def slots(self) -> dict[str, str]:
        c, r = self.c, self.rng
        d, d2 = r.sample(c.details, 2)
        return {
            "a": self.form(c.action, vocab.ACTIONS, 0.3),
            "tech": self.form(c.tech, vocab.TECHS, 0.25),
            "obj": self.form(c.obj, vocab.OBJECTS, 0.25),
            "concern": c.concern,
            "d": d,
            "d2": d2,
            "tech2": c.tech2,
            "obj2": self.form(c.obj2, vocab.OBJECTS, 0.3),
            "a2": c.action2,
            "noun": r.choice(vocab.GENERIC_NOUNS),
            "noun2": r.choice(vocab.GENERIC_NOUNS),
            "adj": r.choice(vocab.GENERIC_ADJECTIVES),
            "outcome": r.choice(vocab.OUTCOMES),
            "cat": self.category.replace("-", " "),
        }

    def fill(self, template: str) -> str:
        text = template.format(**self.slots())
        return text[0].upper() + text[1:]

    def sentences(self, templates: list[str], k: int) -> str:
        return " ".join(self.fill(t) for t in self.rng.sample(templates, k))


# fmt: off
DESCRIPTION_TEMPLATES = [
    "{a} a {tech} {obj} with attention to {concern}, using {d} and {d2}. Use it when {outcome} matters.",
    "A {adj} recipe to {a} the {obj} in {tech} so that {outcome}; it covers {concern} and {d}.",
    "Shows how to {a} the {obj} of a {tech} {noun} while keeping {concern} under control ({d}, {d2}).",
    "Use this when you must {a} a {tech} {obj} and {concern} keeps biting: it walks through {d} and a {adj} "
    "fallback.",
    "{a} the {obj} for {tech} services. Focuses on {concern}: {d}, {d2}, and how to check the result.",
    "Step-by-step guide to {a} a {obj} on {tech}, written for {cat} work where {concern} and {d} matter.",
]
# fmt: on

PARAGRAPH_TEMPLATES = [
    "Most teams reach for this when a {tech} {noun} starts to misbehave around the {obj}.",
    "The goal is to {a} the {obj} once, in one place, instead of scattering ad hoc fixes across the {noun}.",
    "{concern} is the usual reason this goes wrong; {d} is the cheapest guard against it.",
    "If you also run {tech2}, the same approach applies to its {obj2} with minor changes.",
    "Keep the {noun} {adj}: a {adj} {obj} is easier to {a2} later.",
    "This pattern assumes {tech} is already part of the stack and that someone owns the {noun}.",
    "Measure before and after; without a {noun2} you cannot tell whether {d} helped.",
    "Reviewers should look for {d2} in the diff, since that is where {concern} problems hide.",
    "The {obj} is treated as the unit of work, so each {noun} can {a} it independently.",
    "Prefer the {adj} option first and only add {d} when the {noun2} shows a real need.",
    "On {tech2} projects the {obj2} plays a similar role, which is why the two are often confused.",
    "Nothing here is specific to one cloud; the {tech} {noun} may run anywhere.",
    "Document the decision next to the {obj} so the next person knows why {d} is there.",
    "The common failure is to {a} the {obj} without thinking about {concern} at all.",
    "When {outcome}, you know the {noun} is in good shape.",
    "In {cat} code the {obj} tends to grow; keep the {a} logic in a {adj} helper.",
]

STEP_TEMPLATES = [
    "Identify every {noun} that touches the {obj} and list its owner.",
    "Add a {adj} wrapper that can {a} the {obj} through {tech}.",
    "Introduce {d} behind a flag and enable it in staging first.",
    "Write a test that reproduces the {concern} problem before fixing it.",
    "Wire {d2} into the {noun} and record the settings in the config file.",
    "Run the {noun2} against the {obj} and compare with the baseline.",
    "Roll the change out gradually and watch the {obj2} dashboard.",
    "Delete the old code path once the new one has run for a week.",
    "Add a short note to the runbook describing how to {a} the {obj} by hand.",
    "Ask a reviewer familiar with {tech2} to check the {noun}.",
]

PITFALL_TEMPLATES = [
    "Forgetting {d} means {concern} returns as soon as traffic grows.",
    "Do not {a} the {obj} inside a hot loop; batch the work instead.",
    "Relying on {tech} defaults for {d2} is a frequent source of surprises.",
    "Mixing {tech2} and {tech} clients against the same {obj} hides {concern} bugs.",
    "Skipping the test for {d} makes the next refactor risky.",
    "A {adj} {noun} is not enough if the {obj} itself is shared between tenants.",
]

TESTING_TEMPLATES = [
    "Cover the happy path and at least one {concern} scenario with an automated test.",
    "Use a fake {tech} {noun} so the test does not depend on the network.",
    "Assert on the {obj} state after the call, not only on the return value.",
    "Add a regression test for {d} and keep it fast enough to run on every commit.",
    "A short {noun2} run in CI catches most {concern} regressions early.",
]

PREREQ_TEMPLATES = [
    "A working {tech} setup with access to the {obj}.",
    "Permission to change the {noun} configuration.",
    "Basic familiarity with {d} and {concern}.",
    "Optional: {tech2} if the {obj2} is involved.",
    "A staging environment that mirrors production closely.",
]

RELATED_TEMPLATES = [
    "How to {a2} a {obj2} in {tech2}.",
    "Handling {concern} across {cat} services.",
    "Choosing between {d} and {d2}.",
    "When not to {a} the {obj}.",
]


def description_of(w: Writer) -> str:
    return w.fill(w.rng.choice(DESCRIPTION_TEMPLATES))


def title_of(concept: Concept) -> str:
    return " ".join(part.title() for part in (concept.action, concept.tech, concept.obj))


# --------------------------------------------------------------------------- code fences

LANG_BY_TECH = {
    "python": "python", "django": "python", "flask": "python", "fastapi": "python", "pytest": "python",
    "celery": "python", "airflow": "python", "pandas": "python", "pytorch": "python", "tensorflow": "python",
    "sqlalchemy": "python", "poetry": "python", "spark": "python",
    "typescript": "typescript", "javascript": "typescript", "node": "typescript", "react": "typescript",
    "vue": "typescript", "svelte": "typescript", "nextjs": "typescript", "angular": "typescript",
    "jest": "typescript", "playwright": "typescript", "cypress": "typescript", "prisma": "typescript",
    "webpack": "typescript", "vite": "typescript", "graphql": "typescript", "cloudflare": "typescript",
    "go": "go", "rust": "rust", "java": "java", "kotlin": "java",
    "postgres": "sql", "mysql": "sql", "sqlite": "sql", "snowflake": "sql", "bigquery": "sql",
    "duckdb": "sql", "clickhouse": "sql", "dbt": "sql",
    "terraform": "hcl", "docker": "dockerfile",
    "kubernetes": "yaml", "helm": "yaml", "istio": "yaml", "envoy": "yaml", "github actions": "yaml",
    "gitlab": "yaml", "ansible": "yaml", "prometheus": "yaml", "grafana": "yaml",
    "bash": "bash", "linux": "bash", "git": "bash", "make": "bash", "nginx": "bash",
}  # fmt: skip

# fmt: off
CODE_TEMPLATES: dict[str, list[str]] = {
    "python": [
        "def {fn}({var}, *, timeout: float = 5.0) -> dict:\n"
        '    """{A} the {obj} ({concern})."""\n'
        "    result = client.{fn}({var}, timeout=timeout)\n"
        "    if not result.ok:\n"
        '        raise RuntimeError(f"{fn} failed: {{result.status}}")\n'
        "    return result.json()\n",
        "import logging\n\nlog = logging.getLogger(__name__)\n\n\n"
        "def {fn}(items):\n"
        "    for item in items:\n"
        '        log.info("{A} %s with {detail}", item)\n'
        "        yield transform(item)\n",
    ],
    "typescript": [
        "export async function {camel}({var}: string): Promise<Result> {{\n"
        "  const res = await fetch(`/api/{dash}/${{{var}}}`);\n"
        "  if (!res.ok) throw new Error(`{camel} failed: ${{res.status}}`);\n"
        "  return res.json();\n}}\n",
        "const {camel} = (items: Item[]) =>\n"
        "  items.filter(Boolean).map((item) => ({{ ...item, {var}: true }}));\n",
    ],
    "go": [
        "func {Camel}(ctx context.Context, {var} string) error {{\n"
        "\tctx, cancel := context.WithTimeout(ctx, 5*time.Second)\n\tdefer cancel()\n"
        '\treturn client.Do(ctx, "{dash}", {var})\n}}\n',
    ],
    "rust": [
        "pub fn {fn}({var}: &str) -> Result<(), Error> {{\n"
        '    let cfg = Config::load("{dash}.toml")?;\n    cfg.apply({var})\n}}\n',
    ],
    "java": [
        "public Result {camel}(String {var}) {{\n"
        '    log.info("{A} {obj} {{}}", {var});\n    return client.{camel}({var});\n}}\n',
    ],
    "sql": [
        "-- {A} the {obj}: {concern}\nSELECT id, status, updated_at\nFROM {snake}\n"
        "WHERE updated_at > now() - interval '1 day'\nORDER BY id\nLIMIT 100;\n",
        "CREATE INDEX IF NOT EXISTS idx_{snake}_status ON {snake} (status, updated_at);\n",
    ],
    "hcl": [
        'resource "aws_s3_bucket" "{snake}" {{\n  bucket = "{dash}"\n'
        '  tags = {{\n    purpose = "{dash}"\n  }}\n}}\n',
    ],
    "dockerfile": [
        "FROM python:3.11-slim\nWORKDIR /app\nCOPY . .\nRUN pip install --no-cache-dir .\n"
        'HEALTHCHECK CMD ["python", "-m", "app.health"]\nCMD ["python", "-m", "app"]\n',
    ],
    "yaml": [
        "name: {dash}\non:\n  push:\n    branches: [main]\njobs:\n  {snake}:\n    runs-on: ubuntu-latest\n"
        "    steps:\n      - uses: actions/checkout@v4\n      - run: make {dash}\n",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {dash}\nspec:\n  replicas: 3\n"
        "  template:\n    spec:\n      containers:\n        - name: app\n          image: app:1.4.2\n",
    ],
    "bash": [
        "#!/usr/bin/env bash\nset -euo pipefail\n# {A} the {obj} ({concern})\n"
        'for host in "$@"; do\n  echo "{dash} $host"\ndone\n',
    ],
}
# fmt: on


def code_block(spec: SkillSpec, rng: Random) -> str:
    c = spec.concept
    lang = LANG_BY_TECH.get(c.tech, "python")
    words = slug(f"{c.action} {c.obj}").split("-")
    names = {
        "fn": "_".join(words),
        "snake": "_".join(slug(c.obj).split("-")),
        "dash": "-".join(words),
        "camel": words[0] + "".join(w.title() for w in words[1:]),
        "Camel": "".join(w.title() for w in words),
        "var": rng.choice(["key", "item", "name", "payload", "target", "record"]),
        "A": c.action.title(),
        "obj": c.obj,
        "concern": c.concern,
        "detail": rng.choice(c.details),
    }
    return f"```{lang}\n{rng.choice(CODE_TEMPLATES[lang]).format(**names)}```"


# --------------------------------------------------------------------------- documents


def bullets(w: Writer, templates: list[str], k: int, numbered: bool = False) -> str:
    lines = [w.fill(t) for t in w.rng.sample(templates, k)]
    return "\n".join(f"{i}. {line}" if numbered else f"- {line}" for i, line in enumerate(lines, 1))


def section_pool(spec: SkillSpec, w: Writer) -> list[tuple[str, str]]:
    r = w.rng
    return [
        ("Prerequisites", bullets(w, PREREQ_TEMPLATES, r.randint(2, 4))),
        ("Testing", w.sentences(TESTING_TEMPLATES, r.randint(2, 4))),
        ("Variations", w.sentences(PARAGRAPH_TEMPLATES, r.randint(3, 5))),
        ("Related", bullets(w, RELATED_TEMPLATES, r.randint(2, 4))),
        ("Background", w.sentences(PARAGRAPH_TEMPLATES, r.randint(4, 6))),
        ("Troubleshooting", bullets(w, PITFALL_TEMPLATES, r.randint(2, 4))),
        ("Second example", code_block(spec, r)),
    ]


def pitfalls(spec: SkillSpec, w: Writer) -> str:
    lines = [f"- {d.capitalize()}: {w.fill(w.rng.choice(PITFALL_TEMPLATES))}" for d in spec.concept.details]
    return "\n".join(lines)


def body_of(spec: SkillSpec, w: Writer) -> str:
    r = w.rng
    target = r.randint(MIN_BODY, MAX_BODY)
    sections = [
        ("When to use", w.sentences(PARAGRAPH_TEMPLATES, r.randint(2, 4))),
        ("Steps", bullets(w, STEP_TEMPLATES, r.randint(4, 7), numbered=True)),
        ("Example", f"{w.fill('A {adj} starting point for {tech}:')}\n\n{code_block(spec, r)}"),
        ("Pitfalls", pitfalls(spec, w)),
    ]
    extra = section_pool(spec, w)
    r.shuffle(extra)
    text = render_sections(sections)
    notes = 0
    while len(text.encode()) < target:
        if extra:
            sections.append(extra.pop())
        else:
            notes += 1
            sections.append((f"Notes {notes}", w.sentences(PARAGRAPH_TEMPLATES, 4)))
        text = render_sections(sections)
    return text


def render_sections(sections: list[tuple[str, str]]) -> str:
    return "\n\n".join(f"## {head}\n\n{content}" for head, content in sections) + "\n"


def yaml_str(value: str) -> str:
    return json.dumps(value)  # a JSON string is a valid double-quoted YAML scalar


def tags_of(spec: SkillSpec) -> list[str]:
    c = spec.concept
    return [slug(c.tech), slug(c.obj), slug(c.concern), spec.category]


def script_of(spec: SkillSpec) -> str:
    fn = "_".join(slug(f"{spec.concept.action} {spec.concept.obj}").split("-"))
    return (
        f'"""{spec.title}: {spec.concept.concern}."""\n\nimport json\nimport sys\n\n\n'
        f"def {fn}(params: dict) -> dict:\n"
        f'    return {{"ok": True, "skill": "{spec.name}", "input": params}}\n\n\n'
        f'if __name__ == "__main__":\n    print(json.dumps({fn}(json.load(sys.stdin))))\n'
    )


def write_three_file(root: Path, spec: SkillSpec, body: str) -> str:
    folder = root / spec.category
    folder.mkdir(parents=True, exist_ok=True)
    docs = f"# {spec.title}\n\n{spec.description}\n\n{body}"
    (folder / f"{spec.name}.md").write_text(docs, encoding="utf-8")
    text = docs
    if spec.executable:
        (folder / f"{spec.name}.py").write_text(script_of(spec), encoding="utf-8")
    if spec.quality is not None:
        meta = (
            f"---\ndescription: {yaml_str(spec.description)}\ntags: {json.dumps(tags_of(spec))}\n"
            f"quality: {spec.quality}\n---\n\n# {spec.title}\n\n"
            f"Reviewed for {spec.concept.concern}. Quality {spec.quality}/10.\n"
        )
        (folder / f"{spec.name}-SKILL.md").write_text(meta, encoding="utf-8")
        text += meta
    return text


def write_folder(root: Path, spec: SkillSpec, body: str) -> str:
    folder = root / spec.category / spec.name
    folder.mkdir(parents=True, exist_ok=True)
    doc = (
        f"---\nname: {spec.name}\ndescription: {yaml_str(spec.description)}\n---\n\n"
        f"# {spec.title}\n\n{spec.description}\n\n{body}"
    )
    (folder / "SKILL.md").write_text(doc, encoding="utf-8")
    if spec.executable:
        (folder / "scripts").mkdir(exist_ok=True)
        script = folder / "scripts" / f"{spec.name.replace('-', '_')}.py"
        script.write_text(script_of(spec), encoding="utf-8")
    return doc


def write_skill(root: Path, spec: SkillSpec, seed: int) -> str:
    """Write one skill's files; return all of its text (for the query uniqueness index)."""
    w = Writer(spec, Random(f"{seed}:skill:{spec.index}"))
    spec.title = title_of(spec.concept)
    spec.description = description_of(w)
    body = body_of(spec, w)
    return write_folder(root, spec, body) if spec.folder else write_three_file(root, spec, body)


# --------------------------------------------------------------------------- queries


@dataclass
class Piece:
    kind: str
    text: str

    @property
    def words(self) -> list[str]:
        return self.text.split()


def concept_pieces(spec: SkillSpec, rng: Random) -> list[Piece]:
    """Candidate query fragments: name parts (often as synonyms), the concern and its detail terms."""
    c = spec.concept
    pieces = []
    for kind, term, table in (
        ("action", c.action, vocab.ACTIONS),
        ("tech", c.tech, vocab.TECHS),
        ("object", c.obj, vocab.OBJECTS),
    ):
        syns = table.get(term, [])
        text = rng.choice(syns) if syns and rng.random() < 0.4 else term
        pieces.append(Piece(kind, text))
    pieces.append(Piece("concern", c.concern))
    pieces.extend(Piece("detail", d) for d in c.details)
    return pieces


def query_words(pieces: list[Piece]) -> list[str]:
    return [w for p in pieces for w in p.words]


def content_words(pieces: list[Piece], corpus: Corpus, index: int) -> list[str]:
    """Normalised query words that the answer's text contains (the ones a lexical engine can match)."""
    out: list[str] = []
    for w in query_words(pieces):
        nw = normalise(w)
        if nw in corpus.tracked and nw not in out and corpus.contains(index, nw):
            out.append(nw)
    return out


def repeats_name(spec: SkillSpec, words: list[str]) -> bool:
    return set(spec.name.split("-")) <= {w.lower() for w in words}


def ambiguity(pieces: list[Piece], corpus: Corpus, index: int) -> int:
    """How many skills contain every query word that the answer (skill `index`) contains."""
    return len(corpus.matching(content_words(pieces, corpus, index)))


def draft_query(spec: SkillSpec, rng: Random, corpus: Corpus) -> list[Piece] | None:
    pieces = concept_pieces(spec, rng)
    body_side = [p for p in pieces if p.kind in ("concern", "detail")]
    name_side = [p for p in pieces if p.kind not in ("concern", "detail")]
    chosen = [rng.choice(body_side), *rng.sample(name_side, rng.randint(1, 2))]
    spare = [p for p in pieces if p not in chosen]
    rng.shuffle(spare)
    while len(query_words(chosen)) < MIN_QUERY_WORDS and spare:
        chosen.append(spare.pop())
    while ambiguity(chosen, corpus, spec.index) != 1:
        addable = [p for p in spare if len(query_words([*chosen, p])) <= MAX_QUERY_WORDS - 1]
        if not addable:
            return None
        best = min(addable, key=lambda p: ambiguity([*chosen, p], corpus, spec.index))
        chosen.append(best)
        spare.remove(best)
    if len(content_words(chosen, corpus, spec.index)) < 2 or repeats_name(spec, query_words(chosen)):
        return None
    return chosen


def phrase_query(chosen: list[Piece], rng: Random) -> str:
    rng.shuffle(chosen)
    words = query_words(chosen)
    stray = [s for s in vocab.STRAY_PHRASES if len(words) + len(s.split()) <= MAX_QUERY_WORDS]
    if stray and (rng.random() < 0.7 or len(words) < MIN_QUERY_WORDS):
        phrase = rng.choice(stray)
        words = phrase.split() + words if rng.random() < 0.75 else words + phrase.split()
    return " ".join(words)


def build_queries(specs: list[SkillSpec], corpus: Corpus, count: int, seed: int) -> list[dict[str, str]]:
    rng = Random(f"{seed}:queries")
    order = list(range(len(specs)))
    queries: list[dict[str, str]] = []
    seen: set[str] = set()
    for round_no in range(20):
        rng.shuffle(order)
        for i in order:
            if len(queries) >= count:
                return queries
            chosen = draft_query(specs[i], Random(f"{seed}:q:{i}:{round_no}"), corpus)
            if chosen is None:
                continue
            text = phrase_query(chosen, rng)
            if text in seen or not MIN_QUERY_WORDS <= len(text.split()) <= MAX_QUERY_WORDS:
                continue
            seen.add(text)
            queries.append({"id": f"q{len(queries) + 1:04d}", "query": text, "answer": specs[i].id})
    return queries


# --------------------------------------------------------------------------- orchestration


def queries_path(out: Path) -> Path:
    return out.with_name(out.name + ".queries.json")


def read_manifest(out: Path) -> dict[str, Any] | None:
    path = queries_path(out)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data.get("manifest") if data.get("generator") == GENERATOR else None


def clear_previous(out: Path) -> None:
    """Remove an earlier generated library at OUT; refuse to delete anything we did not write."""
    if not out.exists():
        return
    if not any(out.iterdir()):
        return
    if read_manifest(out) is None:
        raise SystemExit(f"refusing to overwrite {out}: it exists and was not written by this generator")
    shutil.rmtree(out)


def generate(out: Path, n: int, seed: int = 7, n_queries: int = 200) -> dict[str, Any]:
    """Write a fresh library of N skills to OUT and OUT.queries.json; return the manifest."""
    start = time.perf_counter()
    clear_previous(out)
    out.mkdir(parents=True, exist_ok=True)
    specs = plan_skills(n, seed)
    corpus = Corpus(tracked_vocabulary())
    total_bytes = 0
    for spec in specs:
        text = write_skill(out, spec, seed)
        total_bytes += len(text.encode())
        corpus.add(spec.index, text)
        if (spec.index + 1) % 2000 == 0:
            log(f"wrote {spec.index + 1}/{n} skills")
    queries = build_queries(specs, corpus, n_queries, seed)
    manifest = {
        "generatorVersion": GENERATOR_VERSION,
        "seed": seed,
        "n": n,
        "queries": len(queries),
        "folderSkills": sum(s.folder for s in specs),
        "threeFileSkills": sum(not s.folder for s in specs),
        "withMetadata": sum(s.quality is not None for s in specs),
        "executable": sum(s.executable for s in specs),
        "categories": len({s.category for s in specs}),
        "totalBytes": total_bytes,
        "distinctTrackedWords": len(corpus.postings),
    }
    doc = {"generator": GENERATOR, "manifest": manifest, "queries": queries}
    queries_path(out).write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    log(f"generated {n} skills, {len(queries)} queries in {time.perf_counter() - start:.1f}s -> {out}")
    return manifest


def ensure_library(out: Path, n: int, seed: int = 7, n_queries: int = 200) -> dict[str, Any]:
    """Reuse OUT if it was generated with the same seed, N and generator version; else regenerate."""
    m = read_manifest(out)
    if (
        m is not None
        and out.is_dir()
        and (m.get("seed"), m.get("n"), m.get("generatorVersion")) == (seed, n, GENERATOR_VERSION)
        and m.get("queries", 0) >= n_queries
    ):
        log(f"reusing {out} (seed {seed}, n {n})")
        return m
    return generate(out, n, seed, n_queries)


def load_queries(out: Path) -> list[dict[str, str]]:
    queries: list[dict[str, str]] = json.loads(queries_path(out).read_text(encoding="utf-8"))["queries"]
    return queries


# --------------------------------------------------------------------------- checking


def frontmatter(path: Path) -> dict[str, str]:
    """The top-level `key: value` lines of a file's YAML frontmatter (values as written)."""
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines or lines[0] != "---" or "---" not in lines[1:]:
        return {}
    end = lines.index("---", 1)
    pairs = (line.split(":", 1) for line in lines[1:end] if ":" in line and not line.startswith(" "))
    return {k.strip(): v.strip() for k, v in pairs}


def scan_ids(out: Path) -> tuple[dict[str, Path], list[str]]:
    """Skill ids found on disk in either layout, and layout problems found on the way."""
    ids: dict[str, Path] = {}
    problems: list[str] = []
    for category in sorted(p for p in out.iterdir() if p.is_dir() and not p.name.startswith(".")):
        for entry in sorted(category.iterdir()):
            if entry.is_dir() and not entry.name.startswith("."):
                skill_md = entry / "SKILL.md"
                if not skill_md.is_file():
                    problems.append(f"{entry}: folder without SKILL.md")
                    continue
                fm = frontmatter(skill_md)
                if fm.get("name") != entry.name or not fm.get("description"):
                    problems.append(f"{skill_md}: frontmatter name {fm.get('name')!r} / description missing")
                ids[f"{category.name}/{entry.name}"] = skill_md
            elif entry.suffix == ".md" and not entry.name.endswith("-SKILL.md"):
                ids[f"{category.name}/{entry.stem}"] = entry
    return ids, problems


def check_names(ids: dict[str, Path]) -> list[str]:
    problems = []
    names = Counter(i.split("/", 1)[1] for i in ids)
    for skill_id in ids:
        name = skill_id.split("/", 1)[1]
        if not NAME_RE.match(name) or len(name) > 64:
            problems.append(f"{skill_id}: invalid name")
        if names[name] > 1:
            problems.append(f"{skill_id}: name not unique")
    return problems


def check_queries(out: Path, ids: dict[str, Path], wanted: int) -> list[str]:
    queries = load_queries(out)
    problems = [] if len(queries) >= wanted else [f"only {len(queries)} queries, wanted {wanted}"]
    for q in queries:
        words = q["query"].split()
        name = q["answer"].split("/", 1)[-1]
        if q["answer"] not in ids:
            problems.append(f"{q['id']}: answer {q['answer']} not in library")
        if not MIN_QUERY_WORDS <= len(words) <= MAX_QUERY_WORDS:
            problems.append(f"{q['id']}: {len(words)} words")
        if set(name.split("-")) <= {w.lower() for w in words}:
            problems.append(f"{q['id']}: query repeats the whole name {name}")
    return problems


def check_library(out: Path, n: int, n_queries: int = 200) -> list[str]:
    """Every problem found in a generated library (empty when it is sound)."""
    ids, problems = scan_ids(out)
    if len(ids) != n:
        problems.append(f"found {len(ids)} skills, expected {n}")
    return problems + check_names(ids) + check_queries(out, ids, n_queries)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, required=True, help="number of skills")
    ap.add_argument("--out", type=Path, required=True, help="library directory (recreated)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--queries", type=int, default=200, help="number of queries to write (default 200)")
    ap.add_argument("--check", action="store_true", help="verify the library after generating it")
    args = ap.parse_args(argv)
    generate(args.out, args.n, args.seed, args.queries)
    if not args.check:
        return 0
    problems = check_library(args.out, args.n, args.queries)
    for p in problems[:50]:
        print(f"CHECK FAILED: {p}", file=sys.stderr)
    log("check passed" if not problems else f"check failed: {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
