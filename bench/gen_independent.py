"""An independent skill-library generator: different vocabulary and structure from generate.py.

    python bench/gen_independent.py --n 10000 --out /tmp/skillshelf-bench/ind-10000 [--doc-kb 3.2] [--check]

Why a second generator: a figure measured on the generator the ranking was tuned against did not
hold on an independent one. This one shares nothing with generate.py/vocab.py:

- Words are pseudo-words built from syllables (e.g. "velmora", "quistan"), so no English synonym,
  stemming or domain knowledge helps; 12 categories, each with its own topic words; a shared
  Zipf-distributed filler vocabulary.
- Skills are Agent Skills folders (`<category>/<name>/SKILL.md`, 60 %) or three-file skills; names
  are two or three topic words. Documents average `--doc-kb` KB (3.2 by default; 10 for the
  "bigger documents" corpus), log-normally spread.
- Every skill has six key words, each shared with about 40 other skills
  (mid-frequency words) and mentioned at most once in the body.

Queries (`OUT.queries.json`, the same shape as generate.py's, so bench/run.py can drive them) are
3-5 words, and the answer holds every one of them (checked against an inverted index of the
whole library: it is the only skill that does). Half are "decoy" queries: two of the words are
another skill's name, and the answer merely mentions them in its body, so an engine that lets two
name matches outweigh full coverage misses them. The rest mix key words and topic words.
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import sys
import time
from collections import defaultdict
from pathlib import Path
from random import Random
from typing import Any

GENERATOR = "skillshelf-independent"
GENERATOR_VERSION = 1
CATEGORIES = 12
ONSETS = [
    "b",
    "br",
    "d",
    "dr",
    "f",
    "g",
    "gl",
    "k",
    "kr",
    "l",
    "m",
    "n",
    "p",
    "pl",
    "qu",
    "r",
    "s",
    "st",
    "t",
    "tr",
    "v",
    "z",
]
VOWELS = ["a", "e", "i", "o", "u", "ai", "ou"]
CODAS = ["", "", "n", "r", "l", "m", "x", "nd", "rt"]


def log(msg: str) -> None:
    print(f"[gen-independent] {msg}", file=sys.stderr, flush=True)


def pseudo_words(rng: Random, count: int) -> list[str]:
    """Distinct lowercase pseudo-words of 2-3 syllables, none ending like an English inflection."""
    words: set[str] = set()
    while len(words) < count:
        syllables = rng.choice((2, 2, 3))
        word = "".join(rng.choice(ONSETS) + rng.choice(VOWELS) + rng.choice(CODAS) for _ in range(syllables))
        if 5 <= len(word) <= 12 and not word.endswith(("s", "ed", "ing", "ly", "e", "y")):
            words.add(word)
    return sorted(words)


class Vocabulary:
    def __init__(self, rng: Random) -> None:
        words = pseudo_words(rng, 2000 + CATEGORIES * 120 + 12000)
        rng.shuffle(words)
        self.filler = words[:2000]
        self.topics = [words[2000 + i * 120 : 2000 + (i + 1) * 120] for i in range(CATEGORIES)]
        self.keys = words[2000 + CATEGORIES * 120 :]
        self.categories = [f"{w}-{i:02d}" for i, w in enumerate(pseudo_words(Random(rng.random()), CATEGORIES))]
        weights = [1 / (rank + 1) for rank in range(len(self.filler))]  # Zipf
        self.cumulative = list(_accumulate(weights))

    def filler_word(self, rng: Random) -> str:
        return rng.choices(self.filler, cum_weights=self.cumulative)[0]


def _accumulate(values: list[float]) -> list[float]:
    total, out = 0.0, []
    for v in values:
        total += v
        out.append(total)
    return out


def sentence(rng: Random, vocab: Vocabulary, topic: list[str], extra: list[str], n_words: int) -> str:
    words = []
    for _ in range(n_words):
        roll = rng.random()
        if roll < 0.12 and extra:
            words.append(rng.choice(extra))
        elif roll < 0.40:
            words.append(rng.choice(topic[: 20 + int(rng.random() * 100)]))
        else:
            words.append(vocab.filler_word(rng))
    return " ".join(words).capitalize() + "."


def generate(out: Path, n: int, seed: int = 11, doc_kb: float = 3.2, n_queries: int = 200) -> dict[str, Any]:
    started = time.perf_counter()
    if out.exists():
        if read_manifest(out) is None and any(out.iterdir()):
            raise SystemExit(f"refusing to overwrite {out}: it exists and was not written by this generator")
        shutil.rmtree(out)
    rng = Random(seed)
    vocab = Vocabulary(rng)
    skills: list[dict[str, Any]] = []
    names: set[str] = set()
    key_pool = list(vocab.keys)
    for i in range(n):
        cat = i % CATEGORIES if rng.random() < 0.7 else rng.randrange(CATEGORIES)
        topic = vocab.topics[cat]
        while True:
            name = "-".join(rng.sample(topic, rng.choice((2, 2, 3))))
            if name not in names:
                names.add(name)
                break
        keys = rng.sample(key_pool[: max(300, n // 5)], 6)
        skills.append({"i": i, "cat": cat, "name": name, "keys": keys, "mentions": []})
    # Decoy queries need answers that mention another skill's name words in their body.
    decoys: list[tuple[int, int]] = []
    for _ in range(n_queries):
        target = rng.randrange(n)
        same_cat = [s for s in rng.sample(skills, min(n, 60)) if s["cat"] == skills[target]["cat"] and s["i"] != target]
        if same_cat:
            decoy = same_cat[0]["i"]
            skills[target]["mentions"] += skills[decoy]["name"].split("-")[:2]
            decoys.append((target, decoy))
    inverted: dict[str, set[int]] = defaultdict(set)
    total_bytes = 0
    for skill in skills:
        text = write_skill(out, skill, vocab, rng, doc_kb)
        total_bytes += len(text.encode())
        for word in set(text.lower().replace("-", " ").split()):
            inverted[word.strip(".,:#*`()")].add(skill["i"])
        if (skill["i"] + 1) % 5000 == 0:
            log(f"wrote {skill['i'] + 1}/{n} skills")
    queries = build_queries(skills, decoys, inverted, vocab, rng, n_queries)
    manifest = {
        "generatorVersion": GENERATOR_VERSION,
        "seed": seed,
        "n": n,
        "docKb": doc_kb,
        "queries": len(queries),
        "categories": CATEGORIES,
        "totalBytes": total_bytes,
        "meanDocBytes": total_bytes / max(n, 1),
        "seconds": round(time.perf_counter() - started, 1),
    }
    queries_path(out).write_text(
        json.dumps({"generator": GENERATOR, "manifest": manifest, "queries": queries}, indent=1), encoding="utf-8"
    )
    log(f"{n} skills, {len(queries)} queries, {total_bytes / n / 1024:.1f} KB mean, {manifest['seconds']} s")
    return manifest


def skill_id(vocab: Vocabulary, skill: dict[str, Any]) -> str:
    return f"{vocab.categories[skill['cat']]}/{skill['name']}"


def write_skill(out: Path, skill: dict[str, Any], vocab: Vocabulary, rng: Random, doc_kb: float) -> str:
    topic = vocab.topics[skill["cat"]]
    own = skill["name"].split("-")
    target_bytes = max(600, int(rng.lognormvariate(math.log(doc_kb * 1024 * 0.86) - 0.08, 0.4)))
    description = sentence(rng, vocab, topic, own, rng.randint(10, 18))
    parts = [f"# {skill['name'].replace('-', ' ').title()}", "", description, ""]
    if skill["mentions"]:
        parts += [f"Related to {' and '.join(skill['mentions'])} work.", ""]
    size = sum(len(p) + 1 for p in parts)
    section = 0
    while size < target_bytes:
        section += 1
        lines = [f"## {rng.choice(topic).title()} {rng.choice(vocab.filler[:200])}", ""]
        lines += [sentence(rng, vocab, topic, own, rng.randint(8, 22)) for _ in range(rng.randint(2, 5))]
        if rng.random() < 0.3:
            lines += ["", "```", f"{rng.choice(topic)} = {rng.choice(own)}({rng.choice(vocab.filler[:50])})", "```"]
        lines.append("")
        size += sum(len(x) + 1 for x in lines)
        parts += lines
    for key in skill["keys"]:  # each key word once, somewhere in the body
        at = rng.randrange(4, len(parts))
        parts[at] = f"{parts[at]} {key}" if parts[at] and not parts[at].startswith(("#", "`")) else parts[at]
    body = "\n".join(parts)
    category = out / vocab.categories[skill["cat"]]
    if skill["i"] % 5 < 3:
        folder = category / skill["name"]
        folder.mkdir(parents=True, exist_ok=True)
        front = f"---\nname: {skill['name']}\ndescription: {description}\n---\n"
        text = front + body
        (folder / "SKILL.md").write_text(text, encoding="utf-8")
    else:
        category.mkdir(parents=True, exist_ok=True)
        text = body
        (category / f"{skill['name']}.md").write_text(text, encoding="utf-8")
    return text


def build_queries(
    skills: list[dict[str, Any]],
    decoys: list[tuple[int, int]],
    inverted: dict[str, set[int]],
    vocab: Vocabulary,
    rng: Random,
    n_queries: int,
) -> list[dict[str, Any]]:
    """Queries whose answer is the only skill holding every word."""
    queries: list[dict[str, Any]] = []
    seen: set[str] = set()

    def holders(words: list[str]) -> set[int]:
        sets = sorted((inverted.get(w, set()) for w in words), key=len)
        return set.intersection(*sets) if sets else set()

    def add(words: list[str], target: int, kind: str) -> bool:
        key = " ".join(words)
        if key in seen or holders(words) != {target}:
            return False
        seen.add(key)
        queries.append(
            {"id": f"q{len(queries):03d}", "query": key, "answer": skill_id(vocab, skills[target]), "kind": kind}
        )
        return True

    def topic_words_of(target: int, exclude: list[str]) -> list[str]:
        topic = vocab.topics[skills[target]["cat"]]
        return [w for w in topic if target in inverted.get(w, set()) and w not in exclude]

    for target, decoy in decoys:
        if len(queries) >= n_queries // 2:
            break
        decoy_words = skills[decoy]["name"].split("-")[:2]
        candidates = topic_words_of(target, decoy_words + skills[target]["name"].split("-"))
        for extra in (1, 2, 2, 3, 3):
            words = decoy_words + rng.sample(skills[target]["keys"], min(extra, 2)) + rng.sample(candidates, extra // 3)
            rng.shuffle(words)
            if add(words, target, "decoy"):
                break
    attempts = 0
    while len(queries) < n_queries and attempts < n_queries * 50:
        attempts += 1
        target = rng.randrange(len(skills))
        name_words = skills[target]["name"].split("-")
        words = rng.sample(name_words, 1) + rng.sample(skills[target]["keys"], rng.choice((1, 2)))
        words += rng.sample(topic_words_of(target, name_words), 1)
        rng.shuffle(words)
        add(words, target, "mixed")
    return queries


def queries_path(out: Path) -> Path:
    return out.with_name(out.name + ".queries.json")


def read_manifest(out: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(queries_path(out).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data.get("manifest") if data.get("generator") == GENERATOR else None


def ensure_library(out: Path, n: int, seed: int = 11, doc_kb: float = 3.2, n_queries: int = 200) -> dict[str, Any]:
    m = read_manifest(out)
    wanted = (seed, n, GENERATOR_VERSION, doc_kb)
    if m is not None and out.is_dir() and (m["seed"], m["n"], m["generatorVersion"], m["docKb"]) == wanted:
        log(f"reusing {out}")
        return m
    return generate(out, n, seed, doc_kb, n_queries)


def load_queries(out: Path) -> list[dict[str, str]]:
    queries: list[dict[str, str]] = json.loads(queries_path(out).read_text(encoding="utf-8"))["queries"]
    return queries


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--doc-kb", type=float, default=3.2)
    ap.add_argument("--queries", type=int, default=200)
    args = ap.parse_args(argv)
    generate(args.out, args.n, args.seed, args.doc_kb, args.queries)
    return 0


if __name__ == "__main__":
    sys.exit(main())
