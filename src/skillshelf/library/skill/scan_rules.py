"""The scanner's rules, as data: what each one catches, how bad it is, where it looks, what to do.

A rule looks at one kind of file (`script`: code an agent may run; `text`: SKILL.md, references and
other prose an agent reads; `package`: package.json / setup.py; `any`: every file, by its name and
first bytes) with a regular expression or a small matcher function. docs/curating.md ("Scanning")
lists them; tests/library/test_scan.py holds a hostile sample and a benign look-alike for each.
A scan is a filter, not a proof: it finds the common shapes of trouble, not every way to hide it.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

RiskLevel = Literal["high", "medium", "low"]
FileKind = Literal["script", "text", "package", "any"]
# One line (1-based; None for the file as a whole) and what to add to the message (a host, a name).
Hit = tuple[int | None, str]
Matcher = Callable[[str, str], Iterator[Hit]]  # (the file's path, its text) -> hits

_FETCH = r"(?:curl|wget|iwr|irm|Invoke-WebRequest|Invoke-RestMethod|fetch)\b"
_RUNNER = r"(?:sudo\s+(?:-\S+\s+)*)?(?:(?:ba|z|da|k|c|fi)?sh|python[\d.]*|perl|ruby|node|php|iex|Invoke-Expression)\b"


@dataclass(frozen=True)
class Rule:
    id: str
    severity: RiskLevel
    applies: frozenset[FileKind]
    message: str  # one line: what was found
    fix: str  # one line: what to do about it
    pattern: re.Pattern[str] | None = None  # a line matches: a hit at that line
    matcher: Matcher | None = None  # or a function for what a line pattern cannot say
    on_bytes: Callable[[bytes], str] | None = None  # or the file's first bytes: what they are, '' if fine
    # Lowercase strings one of which a text must hold for the rule to look further: a regular expression
    # over every file of a big library is slow, a substring test is not.
    needles: tuple[str, ...] = ()

    def hits(self, path: str, text: str, lowered: str | None = None) -> Iterator[Hit]:
        """(line, detail) of each hit. `lowered` is `text` with ASCII letters lowered (`lower_ascii`)."""
        if self.on_bytes is not None:
            return
        if self.matcher is not None:
            if not self.needles or any(n in (lowered or lower_ascii(text)) for n in self.needles):
                yield from self.matcher(path, text)
            return
        assert self.pattern is not None
        lowered = lower_ascii(text) if lowered is None else lowered
        # The pattern runs only on lines that hold a needle: over a whole library's references a regular
        # expression with alternatives at its start is slow, finding a substring is not.
        for start, end in _lines_with(lowered, self.needles):
            if self.pattern.search(text, start, end):
                yield line_of(text, start), ""


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def lower_ascii(text: str) -> str:
    """`text` lowered with every offset kept: str.lower (fast) unless it changes the length (a few
    letters lower to two characters), then A-Z only."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else text.translate(_ASCII_LOWER)


def _lines_with(lowered: str, needles: tuple[str, ...]) -> list[tuple[int, int]]:
    """(start, end) of each line that holds one of `needles`, in order; every line without needles."""
    if not needles:
        return _all_lines(lowered)
    starts: set[int] = set()
    for needle in needles:
        at = lowered.find(needle)
        while at >= 0:
            starts.add(lowered.rfind("\n", 0, at) + 1)
            end = lowered.find("\n", at)
            at = lowered.find(needle, end) if end >= 0 else -1
    return [(start, _line_end(lowered, start)) for start in sorted(starts)]


def _all_lines(text: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    while start <= len(text):
        end = _line_end(text, start)
        spans.append((start, end))
        start = end + 1
    return spans


def _line_end(text: str, start: int) -> int:
    end = text.find("\n", start)
    return end if end >= 0 else len(text)


def line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


# -- matchers --------------------------------------------------------------------------------------
_URL_HOST = re.compile(r"\b(?:https?|wss?|ftp)://([A-Za-z0-9.-]+|\[[0-9A-Fa-f:]+\])(?::\d+)?", re.IGNORECASE)
_NETWORK_CALL = re.compile(
    r"\b(?:curl|wget|iwr|irm|Invoke-WebRequest|Invoke-RestMethod|requests\.\w+|httpx\.\w+|urlopen|urlretrieve|"
    r"fetch|axios|http\.get|https\.get|aiohttp|socket|nc|ncat|scp|rsync|ftp|Net::HTTP|open-uri)\b",
    re.IGNORECASE,
)
_LOCAL_HOSTS = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "[::1]", "::1"})


def _network_hosts(path: str, text: str) -> Iterator[Hit]:
    """Hosts a script contacts: a URL on a line that makes a network call (each host once, where first seen)."""
    seen: set[str] = set()
    for match in _URL_HOST.finditer(text):
        host = match.group(1).lower().rstrip(".")
        if host in seen or host in _LOCAL_HOSTS or host.endswith((".localhost", ".invalid", ".test")):
            continue
        start = text.rfind("\n", 0, match.start()) + 1
        end = text.find("\n", match.end())
        if _NETWORK_CALL.search(text, start, end if end >= 0 else len(text)):
            seen.add(host)
            yield line_of(text, match.start()), f": {host}"


# Zero-width characters among Latin text (an emoji's joiner and Persian's ZWNJ sit between non-ASCII
# letters and are left alone), bidi overrides (Trojan Source) and Unicode tag characters (text an
# agent reads but a person does not see).
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u2060\ufeff\u180e")
_BIDI = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
_BLACK_FLAG = "\U0001f3f4"  # subdivision flags (🏴 + tag letters) are the one honest use of tag characters


_ANY_HIDDEN = re.compile("[" + "".join(sorted(_ZERO_WIDTH | _BIDI)) + "\U000e0000-\U000e007f]")


def _hidden_characters(path: str, text: str) -> Iterator[Hit]:
    if text.isascii():  # every character looked for is outside ASCII; this is known without reading the text
        return
    # Only the lines holding one are looked at character by character: an emoji's joiner in a long
    # document made every line of it go through the loop in Python.
    line_end, number, counted = -1, 1, 0
    for match in _ANY_HIDDEN.finditer(text):
        if match.start() < line_end:
            continue  # this line was judged already
        start = text.rfind("\n", 0, match.start()) + 1
        line_end = _line_end(text, match.start())
        number, counted = number + text.count("\n", counted, start), start
        found = _hidden_in(text[start:line_end])
        if found:
            yield number, f": {found}"


def _hidden_in(line: str) -> str:
    for index, char in enumerate(line):
        if char in _BIDI:
            return f"bidi control U+{ord(char):04X}"
        if char in _ZERO_WIDTH and not (index == 0 and char == "\ufeff"):
            around = line[max(0, index - 1) : index] + line[index + 1 : index + 2]
            if any(c.isascii() for c in around) or not around:
                return f"zero-width U+{ord(char):04X}"
        if 0xE0000 <= ord(char) <= 0xE007F:
            start = index
            while start > 0 and 0xE0000 <= ord(line[start - 1]) <= 0xE007F:
                start -= 1
            if not line[:start].endswith(_BLACK_FLAG):
                return f"tag character U+{ord(char):05X}"
    return ""


_COMMENT = re.compile(r"<!--(.*?)-->", re.DOTALL)
_AIMED_AT_AGENT = re.compile(
    r"\b(?:ignore|disregard|do not|don't|never|always|you (?:must|should|are|will|need)|your (?:task|instructions|"
    r"rules)|instead|run|execute|send|upload|curl|wget|secret|password|api key)\b",
    re.IGNORECASE,
)
_TOOLING_COMMENT = re.compile(
    r"^\s*(?:toc|/?toc\b.*|markdownlint[- ].*|prettier-ignore.*|vale .*|cspell:.*|end ?toc|more|"
    r"(?:begin|end)[ _-]\w+.*|#?region.*|#?endregion.*)\s*$",
    re.IGNORECASE,
)


def _instruction_comments(path: str, text: str) -> Iterator[Hit]:
    """HTML comments (invisible once rendered) that speak to the agent."""
    for match in _COMMENT.finditer(text):
        body = match.group(1)
        if _TOOLING_COMMENT.match(body) or not _AIMED_AT_AGENT.search(body):
            continue
        yield text.count("\n", 0, match.start()) + 1, ""


_EXEC_MAGIC = (
    (b"\x7fELF", "ELF"),
    (b"\xfe\xed\xfa\xce", "Mach-O"),
    (b"\xfe\xed\xfa\xcf", "Mach-O"),
    (b"\xce\xfa\xed\xfe", "Mach-O"),
    (b"\xcf\xfa\xed\xfe", "Mach-O"),
    (b"\xca\xfe\xba\xbe", "Mach-O universal"),
    (b"\x00asm", "WebAssembly"),
)
ARCHIVE_SUFFIXES = (".zip", ".tar", ".tgz", ".tar.gz", ".tar.bz2", ".tar.xz", ".gz", ".bz2", ".xz", ".7z",
                    ".rar", ".jar", ".whl", ".egg", ".apk", ".deb", ".rpm", ".dmg", ".pkg", ".msi")  # fmt: skip


def executable_kind(head: bytes) -> str:
    """'ELF', 'Mach-O', 'PE', ... for a compiled program's first bytes; '' for anything else."""
    for magic, kind in _EXEC_MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith(b"MZ") and len(head) >= 64:
        offset = int.from_bytes(head[60:64], "little")
        if head[offset : offset + 4] == b"PE\0\0" or offset >= len(head):  # the header may lie past what was read
            return "PE"
    return ""


def _archives(path: str, text: str) -> Iterator[Hit]:
    if path.lower().endswith(ARCHIVE_SUFFIXES):
        yield None, f": {path.rsplit('/', 1)[-1]}"


MINIFIED_LINE = 1000  # characters; hand-written code stays far below
BLOB_CHARS = 200  # a run of base64 or hex this long with high entropy is packed data or code
# A match starts only where a run of these characters starts (the look-behind): without it a run too short to
# match was tried again from each of its characters, so every identifier in a script cost its length squared.
_BLOB = re.compile(rf"(?<![A-Za-z0-9+/=_-])[A-Za-z0-9+/=_-]{{{BLOB_CHARS},}}")
# Bits per character: base64 of packed bytes has ~6, hex ~4; a protein or DNA sequence (one case of
# letters) stays under 4.4, so only a blob that mixes cases and digits, or is all hex, counts.
BLOB_ENTROPY = 4.5
HEX_ENTROPY = 3.5


_LONG_LINE = re.compile(rf"^[^\n]{{{MINIFIED_LINE + 1},}}", re.MULTILINE)


def _obfuscation(path: str, text: str) -> Iterator[Hit]:
    """The first very long line or high-entropy blob (one is enough to say so)."""
    if max(map(len, text.split("\n"))) < BLOB_CHARS:
        return  # neither fits on a line this short: both expressions would try every character for nothing
    long_line = _LONG_LINE.search(text)
    blob = next((m for m in _BLOB.finditer(text) if _packed(m.group(0))), None)
    if long_line is not None and (blob is None or long_line.start() <= blob.start()):
        end = text.find("\n", long_line.start())
        length = (end if end >= 0 else len(text)) - long_line.start()
        yield line_of(text, long_line.start()), f": a line of {length:,} characters"
    elif blob is not None:
        yield line_of(text, blob.start()), f": an encoded blob of {len(blob.group(0))} characters"


def _packed(blob: str) -> bool:
    if all(c in "0123456789abcdefABCDEF" for c in blob):
        return _entropy(blob) >= HEX_ENTROPY
    return _entropy(blob) >= BLOB_ENTROPY


def _entropy(text: str) -> float:
    counts: dict[str, int] = {}
    for char in text:
        counts[char] = counts.get(char, 0) + 1
    return -sum(n / len(text) * math.log2(n / len(text)) for n in counts.values())


_NPM_HOOKS = ("preinstall", "install", "postinstall", "preuninstall", "postuninstall")
_CMDCLASS = re.compile(r"\bcmdclass\s*=|\[tool\.setuptools\.cmdclass\]")


def _install_hooks(path: str, text: str) -> Iterator[Hit]:
    name = path.rsplit("/", 1)[-1]
    if name == "package.json":
        try:
            scripts = json.loads(text).get("scripts", {})
        except (ValueError, AttributeError):
            return
        if not isinstance(scripts, dict):
            return
        for hook in _NPM_HOOKS:
            if hook in scripts:
                at = text.find(f'"{hook}"')
                yield (line_of(text, at) if at >= 0 else None), f": {hook}"
    elif name in ("setup.py", "pyproject.toml", "setup.cfg"):
        for match in _CMDCLASS.finditer(text):
            yield line_of(text, match.start()), ": cmdclass"


# -- the rules -------------------------------------------------------------------------------------
def _re(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern, re.IGNORECASE | re.MULTILINE)


_DOWNLOAD_TO_SHELL = _re(
    rf"{_FETCH}[^|\n]*\|\s*{_RUNNER}(?!\s*-m\s+json)"  # curl ... | sh, iwr ... | iex
    rf"|(?:^|[\s;&(]){_RUNNER}\s+<\(\s*{_FETCH}"  # bash <(curl ...)
)
_FETCH_NEEDLES = ("curl", "wget", "iwr", "irm", "invoke-", "fetch")  # a line without one cannot download
_SCRIPTS: frozenset[FileKind] = frozenset({"script"})
_TEXT: frozenset[FileKind] = frozenset({"text"})

RULES: tuple[Rule, ...] = (
    Rule(
        "download-exec",
        "high",
        _SCRIPTS,
        "downloads code and runs it in a shell or interpreter (curl|sh and the like)",
        "ship the code in the skill, or download to a file, check its digest, then run it",
        pattern=_DOWNLOAD_TO_SHELL,
        needles=_FETCH_NEEDLES,
    ),
    Rule(
        "download-exec-doc",
        "medium",
        _TEXT,
        "tells the agent to download code and pipe it into a shell or interpreter",
        "name a package to install, or download to a file and check its digest first",
        pattern=_DOWNLOAD_TO_SHELL,
        needles=_FETCH_NEEDLES,
    ),
    Rule(
        "decoded-exec",
        "high",
        frozenset({"script", "text"}),
        "runs code that is decoded or fetched at run time (base64 | sh, eval of fetched text)",
        "ship the code as readable source in the skill",
        pattern=_re(
            rf"base64\s+(?:-d|-D|--decode)\b[^|\n]*\|\s*{_RUNNER}"
            r"|\b(?:eval|exec|Function)\s*\(?[^\n]{0,80}(?:b64decode|a2b_base64|atob\s*\(|fromCharCode|"
            r"urlopen|requests\.get|httpx\.get|fetch\s*\(|FromBase64String|decompress)"
            rf"|\b(?:eval|(?:python[\d.]*|node|perl|ruby|php)\s+-[ce]|(?:ba|z)?sh\s+-c)\s+[\"']?\$\(\s*{_FETCH}"
            r"|\b(?:iex|Invoke-Expression)\s*\(?\s*\(?\s*(?:New-Object\s+Net\.WebClient|iwr|irm|Invoke-WebRequest|"
            r"\[System\.Text\.Encoding\])"
        ),
        needles=("base64", "eval", "exec", "function", "iex", "invoke-expression", "$("),
    ),
    Rule(
        "credential-read",
        "high",
        _SCRIPTS,
        "reads a place credentials are kept (SSH or cloud keys, gh tokens, .env, browser profiles, keychains)",
        "pass what the script needs as an argument or a named variable instead",
        pattern=_re(
            r"(?:~|\$HOME|\$\{HOME\}|%USERPROFILE%|expanduser\([\"']~|home\(\)|homedir\(\))[^\n]{0,20}/?"
            r"\.(?:ssh|aws|gnupg|netrc|docker/config\.json|kube/config|config/gh|git-credentials|npmrc|pypirc)\b"
            r"|[\"'/]\.ssh/id_|\.aws/credentials|\.config/gh/hosts|"
            r"(?:cat|open|read_text|readFile\w*|source|load_dotenv|Get-Content)\b[^\n]{0,40}[\"'\s/(]\.env\b(?![.\w-])"
            r"|security\s+(?:find-generic-password|find-internet-password|dump-keychain)|login\.keychain"
            r"|(?:Google/Chrome|google-chrome|chromium|BraveSoftware|Microsoft/Edge|mozilla/firefox|Firefox/Profiles)"
            r"[^\n]{0,80}(?:Login Data|Cookies|Local State|Web Data|key[34]\.db|logins\.json)"
            r"|Login Data[\"']|logins\.json|key4\.db|cookies\.sqlite"
        ),
        needles=(
            ".ssh",
            ".aws",
            ".gnupg",
            ".netrc",
            ".docker",
            ".kube",
            "/gh",
            "credentials",
            ".npmrc",
            ".pypirc",
            "chromium",
            "logins.json",
            "key4.db",
            ".env",
            "security",
            "keychain",
            "chrome",
            "firefox",
            "brave",
            "edge/",
            "login data",
            "cookies",
            "local state",
        ),
    ),
    Rule(
        "env-dump",
        "medium",
        _SCRIPTS,
        "dumps the whole environment (every variable, secrets included)",
        "read the variables the script needs by name",
        pattern=_re(
            r"^\s*(?:env|printenv|set|export -p|Get-ChildItem\s+env:|gci\s+env:)\s*(?:$|[|>;&])"
            r"|[|;&]\s*(?:env|printenv)\s*(?:$|[|>;&])"
            r"|(?:dumps|dump|print|pprint|str|repr|dict|json\.dumps|stringify|post|send)\s*\(\s*(?:dict\()?\s*"
            r"(?:os\.environ|process\.env)\s*\)?\s*[),]"
        ),
        needles=("env", "gci ", "set", "export -p"),
    ),
    Rule(
        "network-host",
        "low",
        _SCRIPTS,
        "contacts a host over the network",
        "check the host is one the skill says it uses, and that it should get what is sent",
        matcher=_network_hosts,
        needles=("://",),
    ),
    Rule(
        "agent-override",
        "high",
        _TEXT,
        "tells the agent to override its rules or hide what it does from the user (prompt injection)",
        "remove the instruction; a skill may guide the agent, never countermand the user or its rules",
        pattern=_re(
            r"\b(?:ignore|disregard|forget|override)\s+(?:all\s+|any\s+|the\s+|your\s+)*(?:previous|prior|above|"
            r"earlier|preceding|system|original|safety)\s+(?:instructions|rules|prompts?|guidelines|directions)"
            r"|\b(?:do\s+not|don't|never)\s+(?:tell|inform|mention\s+(?:this|it|that)\s+to|notify|alert|"
            r"reveal\s+(?:this|it)\s+to)\s+the\s+user"
            r"|\bwithout\s+(?:telling|informing|notifying|alerting|asking)\s+the\s+user"
            r"|\b(?:hide|conceal|keep)\s+(?:this|these|it|them)\s+(?:hidden\s+)?from\s+the\s+user"
            r"|\byou\s+are\s+now\s+(?:in\s+)?(?:DAN|developer\s+mode|jailbroken|unrestricted)"
        ),
        needles=("ignore", "disregard", "forget", "override", "the user", "you are now"),
    ),
    Rule(
        "hidden-chars",
        "high",
        frozenset({"text", "script"}),
        "holds characters a reader does not see (zero-width, bidi controls, tag characters)",
        "remove them; text an agent reads should be what a person reviewing it sees",
        matcher=_hidden_characters,
    ),
    Rule(
        "hidden-comment",
        "low",  # templates leave notes to the writer in comments; an injection in one fires agent-override too
        _TEXT,
        "an HTML comment (invisible once rendered) that speaks to the agent",
        "put instructions in the visible text, or remove the comment",
        matcher=_instruction_comments,
        needles=("<!--",),
    ),
    Rule(
        "binary-executable",
        "high",
        frozenset({"any"}),
        "is a compiled program (no source to review)",
        "ship the source and build it, or install it from a package the skill names",
        on_bytes=executable_kind,
    ),
    Rule(
        "archive",
        "medium",
        frozenset({"any"}),
        "is an archive (its contents are not reviewed or scanned)",
        "ship the files themselves",
        matcher=_archives,
    ),
    Rule(
        "obfuscated",
        "medium",
        _SCRIPTS,
        "looks minified or obfuscated",
        "ship readable source (the unminified file)",
        matcher=_obfuscation,
    ),
    Rule(
        "install-hook",
        "high",
        frozenset({"package"}),
        "runs code when a package is installed (npm install hooks, setup.py cmdclass)",
        "drop the hook; say in SKILL.md what to run, if anything",
        matcher=_install_hooks,
    ),
)
RULES_BY_ID = {rule.id: rule for rule in RULES}
