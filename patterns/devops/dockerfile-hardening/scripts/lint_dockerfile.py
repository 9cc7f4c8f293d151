#!/usr/bin/env python3
"""Check a Dockerfile for common hardening problems.

Reads JSON from stdin: {"dockerfile": "<Dockerfile text>"}.
Prints JSON to stdout:
  {"passed": bool, "stages": int,
   "findings": [{"line": int, "rule": str, "severity": str, "message": str}]}
"passed" is false when any finding has severity "error". Exit code 0 when the input could be
read (whatever the verdict), 2 on bad input. Line numbers are 1-based and point at the first
line of the instruction (continuation lines are joined).
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

SECRET_NAME = re.compile(r"(PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|PRIVATE_?KEY|ACCESS_?KEY)", re.IGNORECASE)


def logical_lines(text: str) -> list[tuple[int, str]]:
    """Join backslash continuations; drop comments and blank lines. Returns (line, text)."""
    result: list[tuple[int, str]] = []
    buffer: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), start=1):
        stripped = raw.strip()
        if stripped.startswith("#") or (not stripped and not buffer):
            continue
        if not buffer:
            start = number
        if stripped.endswith("\\"):
            buffer.append(stripped[:-1])
            continue
        buffer.append(stripped)
        result.append((start, " ".join(part.strip() for part in buffer if part.strip())))
        buffer = []
    if buffer:
        result.append((start, " ".join(buffer)))
    return result


Finding = tuple[str, str, str]  # (rule, severity, message)
PIN_ADVICE = "pin a version (and ideally a digest)"


def _image_findings(image: str) -> list[Finding]:
    """Findings for a base image reference that is not a build stage, scratch or a variable."""
    if "@sha256:" in image:
        return []
    name_part = image.rsplit("/", 1)[-1]  # a registry port (host:5000/app) is not a tag
    if ":" not in name_part:
        return [("DH001", "warning", f"base image {image} has no tag; {PIN_ADVICE}")]
    if name_part.endswith(":latest"):
        return [("DH001", "warning", f"base image {image} uses :latest; {PIN_ADVICE}")]
    return [("DH002", "info", f"base image {image} is pinned by tag only; pin by @sha256 digest")]


def _add_findings(args: str) -> list[Finding]:
    if re.search(r"https?://", args):
        return [("DH003", "warning", "ADD from a URL skips checksum verification; download and verify in RUN")]
    if not re.search(r"\.(tar|tar\.gz|tgz|tar\.bz2|tar\.xz)\b", args):
        return [("DH003", "warning", "use COPY for local files; ADD also unpacks archives and fetches URLs")]
    return []


def _env_findings(keyword: str, args: str) -> list[Finding]:
    if keyword == "ARG" or "=" not in args:
        names = args.split("=", maxsplit=1)[0].split()[:1]  # ARG NAME[=default] or legacy ENV NAME value
    else:
        names = re.findall(r"(?:^|\s)([A-Za-z_][A-Za-z0-9_]*)=", args)
    for name in names:
        if SECRET_NAME.search(name):
            message = (
                f"{keyword} {name} looks like a secret; it is stored in the image history. "
                "Use RUN --mount=type=secret instead"
            )
            return [("DH004", "error", message)]
    return []


def _run_findings(args: str) -> list[Finding]:
    found: list[Finding] = []
    if re.search(r"\b(curl|wget)\b[^|;&]*\|\s*(sudo\s+)?(ba|z|da)?sh\b", args):
        found.append(("DH005", "warning", "piping a download into a shell runs unverified code; verify first"))
    if re.search(r"\bapt-get\s+(-\S+\s+)*install\b", args):
        if "--no-install-recommends" not in args:
            found.append(("DH006", "warning", "apt-get install without --no-install-recommends adds packages"))
        if not re.search(r"\bapt-get\s+(-\S+\s+)*update\b", args):
            found.append(("DH006", "warning", "run apt-get update in the same RUN as apt-get install"))
        if "/var/lib/apt/lists" not in args:
            found.append(("DH006", "info", "remove /var/lib/apt/lists/* in the same RUN to keep the layer small"))
    if re.search(r"\bpip3?\s+install\b", args) and "--no-cache-dir" not in args:
        found.append(("DH007", "info", "pip install without --no-cache-dir leaves its cache in the layer"))
    if re.search(r"(^|[;&|]\s*)sudo\b", args):
        found.append(("DH008", "warning", "sudo is unnecessary at build time and risky at run time"))
    if re.search(r"\bchmod\s+(-R\s+)?777\b", args):
        found.append(("DH009", "warning", "chmod 777 makes files writable by any user in the container"))
    return found


def lint_dockerfile(dockerfile: str) -> dict[str, Any]:
    """Return the report described in the module docstring."""
    findings: list[dict[str, Any]] = []
    stage_names: set[str] = {"scratch"}
    stages = 0
    final_user: tuple[int, str] | None = None
    healthcheck = False
    last_from = 1
    for line, instruction in logical_lines(dockerfile):
        keyword, _, args = instruction.partition(" ")
        keyword = keyword.upper()
        args = args.strip()
        found: list[Finding] = []
        if keyword == "FROM":
            stages += 1
            last_from = line
            final_user = None  # USER does not carry over between stages
            words = [word for word in args.split() if not word.startswith("--")] or [""]
            if "$" not in words[0] and words[0].lower() not in stage_names:
                found = _image_findings(words[0])
            if len(words) >= 3 and words[1].upper() == "AS":
                stage_names.add(words[2].lower())
        elif keyword == "USER":
            final_user = (line, args.split(":")[0])
        elif keyword == "HEALTHCHECK":
            healthcheck = True
        elif keyword == "ADD":
            found = _add_findings(args)
        elif keyword in ("ENV", "ARG"):
            found = _env_findings(keyword, args)
        elif keyword == "RUN":
            found = _run_findings(args)
        findings.extend(
            {"line": line, "rule": rule, "severity": severity, "message": message} for rule, severity, message in found
        )
    if stages == 0:
        findings.append({"line": 1, "rule": "DH000", "severity": "error", "message": "no FROM instruction found"})
    elif final_user is None or final_user[1] in ("root", "0"):
        message = "the final stage runs as root; add a non-root USER before CMD/ENTRYPOINT"
        line = final_user[0] if final_user else last_from
        findings.append({"line": line, "rule": "DH010", "severity": "error", "message": message})
    if stages and not healthcheck:
        message = "no HEALTHCHECK (fine on Kubernetes, which ignores it and uses probes)"
        findings.append({"line": 1, "rule": "DH011", "severity": "info", "message": message})
    findings.sort(key=lambda finding: (finding["line"], finding["rule"]))
    passed = not any(finding["severity"] == "error" for finding in findings)
    return {"passed": passed, "stages": stages, "findings": findings}


def main() -> int:
    try:
        payload = json.load(sys.stdin)
    except json.JSONDecodeError as exc:
        print(json.dumps({"error": f"stdin is not JSON: {exc}"}))
        return 2
    if not isinstance(payload, dict) or not isinstance(payload.get("dockerfile"), str):
        print(json.dumps({"error": 'expected {"dockerfile": "..."}'}))
        return 2
    print(json.dumps(lint_dockerfile(payload["dockerfile"])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
