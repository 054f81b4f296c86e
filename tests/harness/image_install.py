"""dr as the image installs it, for tests that run dr the way the CronJob does (issue 30).

The Dockerfile copies what `.dockerignore` lets into the build context and runs three steps on
it: the lock without resolving, the package without its dependencies, `pip check`. `image_venv`
does the same into a fresh venv (no extras, nothing of the test venv), readable by the image's
uid; `as_image_user` is how a process is started as that user (uid 10001, no supplementary
groups) when the tests run as root.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
IMAGE_UID = 10001  # the Dockerfile's `useradd --uid`


def _docker_pattern(pattern: str) -> re.Pattern:
    out = ""
    for part in re.split(r"(\*\*|\*|\?)", pattern.strip("/")):
        out += {"**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
    return re.compile(out)


def build_context_files(root: Path = ROOT) -> list[str]:
    """The files `.dockerignore` lets into the build context: Docker's rule, the last matching
    pattern wins, and a pattern matches a path when it matches the path or one of its parents."""
    rules = []
    for line in (root / ".dockerignore").read_text(encoding="utf-8").splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            rules.append((line.startswith("!"), _docker_pattern(line.lstrip("!"))))
    kept = []
    for path in sorted(p for p in root.rglob("*") if p.is_file() and ".git" not in p.parts[len(root.parts):][:1]):
        relative = path.relative_to(root).as_posix()
        parts = relative.split("/")
        prefixes = ["/".join(parts[:i]) for i in range(1, len(parts) + 1)]
        included = True
        for keep, pattern in rules:
            if any(pattern.fullmatch(prefix) for prefix in prefixes):
                included = keep
        if included:
            kept.append(relative)
    return kept


def image_venv(base: Path) -> Path:
    """A venv under `base` (which the image's uid must be able to enter) holding a plain install
    of the build context; returns the venv's folder."""
    context = base / "context"
    for relative in build_context_files(ROOT):
        target = context / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, target)
    venv = base / "venv"
    subprocess.run([base_python(), "-m", "venv", "--without-pip", str(venv)], check=True)
    # pip of the test venv installs into the bare one
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "--disable-pip-version-check"]
    for argv in (["install", "--quiet", "--no-deps", "-r", str(context / "requirements.lock")],
                 ["install", "--quiet", "--no-deps", str(context)], ["check"]):
        done = subprocess.run(pip + argv, capture_output=True, text=True, timeout=900)
        if done.returncode:
            raise AssertionError(f"{argv}: {done.stdout[-3000:]}{done.stderr[-3000:]}")
    for folder, _dirs, _files in os.walk(base):
        os.chmod(folder, 0o755)
    return venv


def base_python() -> str:
    """A Python 3.11 that the image's user can run: the venv links to it, and the test venv's own
    base may lie in a folder only root may enter (pyenv under /root). Python 3.11, the image's."""
    candidates = [sys._base_executable, "/usr/local/bin/python3.11", "/usr/bin/python3.11"]
    if os.geteuid() != 0:
        return candidates[0]
    for candidate in dict.fromkeys(candidates):
        try:
            done = subprocess.run([candidate, "-c", "import sys, encodings; assert sys.version_info[:2] == (3, 11)"],
                                  user=IMAGE_UID, group=IMAGE_UID, extra_groups=[], capture_output=True, timeout=60)
        except OSError:
            continue
        if done.returncode == 0:
            return candidate
    raise AssertionError(f"no Python 3.11 that uid {IMAGE_UID} may run among {candidates}: install Debian's python3.11")


def as_image_user() -> list[str]:
    """The prefix that runs a command as the image's user: empty unless the tests run as root."""
    if os.geteuid() != 0:
        return []
    return ["setpriv", f"--reuid={IMAGE_UID}", f"--regid={IMAGE_UID}", "--clear-groups"]
