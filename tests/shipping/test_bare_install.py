"""dr as the image ships it: a plain `pip install` of the build context, no extras (issue 30).

The Dockerfile copies what `.dockerignore` lets into the build context and runs `pip install`
on it. This test does the same into a fresh venv, then runs dr the way the CronJob runs it: as a
non-root user (uid 10001, the image's) whose home is not writable and who can write only below
/tmp, with no bytecode written. `dr plugins` must load every built-in exporter, and a files + git
backup, `verify --read-data` and restores must work from that install alone. It fails when a
module dr imports comes only with an extra, when the build context lacks a file the package
needs, or when dr writes outside /tmp.
"""

from __future__ import annotations

import filecmp
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import pytest

from tests.cli.planfiles import files_source, key_pair, local_target, write_plan

ROOT = Path(__file__).resolve().parents[2]
IMAGE_UID = 10001  # the Dockerfile's `useradd --uid`

pytestmark = pytest.mark.slow


def _docker_pattern(pattern: str) -> re.Pattern:
    out = ""
    for part in re.split(r"(\*\*|\*|\?)", pattern.strip("/")):
        out += {"**": ".*", "*": "[^/]*", "?": "[^/]"}.get(part, re.escape(part))
    return re.compile(out)


def build_context_files(root: Path) -> list[str]:
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


def test_the_build_context_holds_the_package_and_nothing_else():
    files = build_context_files(ROOT)
    assert {"pyproject.toml", "requirements.lock", "dr/cli/main.py"} <= set(files)
    assert not [f for f in files if f.startswith(("tests/", ".venv/", "bench/", ".git/")) or "__pycache__" in f]


@pytest.fixture(scope="module")
def image_like(tmp_path_factory):
    """A venv holding a plain install of the build context, readable by the image's uid."""
    # not below pytest's own folder, which only root may enter
    base = Path(tempfile.mkdtemp(prefix="dr-bare-install-"))
    base.chmod(0o755)
    context = base / "context"
    for relative in build_context_files(ROOT):
        target = context / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / relative, target)
    venv = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    # the Dockerfile's three steps: the lock without resolving, dr without its dependencies, a
    # check that the lock holds what dr needs; pip of the test venv installs into the bare one
    pip = [sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python")]
    for argv in (["install", "--no-deps", "-r", str(context / "requirements.lock")],
                 ["install", "--no-deps", str(context)], ["check"]):
        done = subprocess.run(pip + argv + ["--disable-pip-version-check"] + (["--quiet"] if argv[0] == "install" else []),
                              capture_output=True, text=True, timeout=900)
        assert done.returncode == 0, (argv, done.stdout[-3000:] + done.stderr[-3000:])
    for folder, _dirs, _files in os.walk(base):
        os.chmod(folder, 0o755)
    yield venv
    shutil.rmtree(base, ignore_errors=True)


def _as_image_user(venv: Path, argv: list[str], work: Path) -> subprocess.CompletedProcess:
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": "/nonexistent", "TMPDIR": str(work),
           "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
    prefix = []
    if os.geteuid() == 0:  # as the image runs: uid 10001, no supplementary groups
        prefix = ["setpriv", f"--reuid={IMAGE_UID}", f"--regid={IMAGE_UID}", "--clear-groups"]
    return subprocess.run(prefix + [str(venv / "bin" / "dr"), *argv], capture_output=True, text=True,
                          env=env, cwd=str(work), timeout=300)


def _declared_exporters() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    return set(project["project"]["entry-points"]["dr.exporters"])


def test_a_plain_install_loads_every_built_in_exporter(image_like, work):
    done = _as_image_user(image_like, ["plugins", "--json"], work)
    assert done.returncode == 0, done.stderr
    plugins = json.loads(done.stdout)
    rows = plugins["exporters"] if isinstance(plugins, dict) else plugins
    loaded = {row["name"] for row in rows if not row.get("error")}
    failed = {row["name"]: row.get("error") for row in rows if row.get("error")}
    assert not failed, failed
    assert loaded == _declared_exporters()


@pytest.fixture
def work():
    """A folder the image's user may write: what /tmp is in the pod."""
    folder = Path(tempfile.mkdtemp(prefix="dr-image-work-"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


def _git_remote(work: Path) -> Path:
    source = work / "declarations"
    source.mkdir()
    (source / "kustomization.yaml").write_text("resources: [queue.yaml]\n")
    (source / "queue.yaml").write_text("kind: ClusterQueue\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run(git + ["init", "-q", "-b", "main", str(source)], check=True)
    subprocess.run(git + ["-C", str(source), "add", "."], check=True)
    subprocess.run(git + ["-C", str(source), "commit", "-qm", "platform"], check=True)
    remote = work / "declarations.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(source), str(remote)], check=True)
    return remote


def test_files_and_git_back_up_verify_and_restore_from_a_plain_install(image_like, work):
    config = work / "config"
    (config / "team").mkdir(parents=True)
    (config / "team" / "quota.yaml").write_text("gpus: 8\n")
    (config / "settings.env").write_text("MODE=prod\n")
    identity, recipient = key_pair(work)
    remote = _git_remote(work)
    git_source = (f"  - name: declarations\n    type: git\n    repositories:\n"
                  f"      - {{name: platform, url: \"{remote}\"}}\n")
    plan = write_plan(work / "plan.yaml", local_target(work / "repository"),
                      files_source("config", [str(config)]) + git_source, [recipient])
    if os.geteuid() == 0:  # the image's user owns what it backs up (git refuses others' repositories)
        subprocess.run(["chown", "-R", f"{IMAGE_UID}:{IMAGE_UID}", str(work)], check=True)

    for argv in (["backup", "--plan", plan], ["verify", "--plan", plan, "--read-data"]):
        done = _as_image_user(image_like, argv, work)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
    restored = work / "restored-config"
    done = _as_image_user(image_like, ["restore", "--plan", plan, "--source", "config", "--to", str(restored)], work)
    assert done.returncode == 0, done.stderr
    copies = list(restored.rglob("quota.yaml"))
    assert len(copies) == 1 and filecmp.cmp(copies[0], config / "team" / "quota.yaml", shallow=False)
    done = _as_image_user(image_like, ["restore", "--plan", plan, "--source", "declarations",
                                       "--to", str(work / "restored-git")], work)
    assert done.returncode == 0, done.stderr
    bundles = [p for p in (work / "restored-git").rglob("*") if p.is_file()]
    assert bundles, "the git restore wrote nothing"


def test_the_lock_pins_every_declared_dependency_within_its_range():
    from packaging.requirements import Requirement

    pinned = {}
    for line in (ROOT / "requirements.lock").read_text(encoding="utf-8").splitlines():
        if line and not line.startswith("#"):
            name, _, version = line.partition("==")
            pinned[name.lower().replace("_", "-")] = version
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    wrong = []
    for text in project["dependencies"]:
        requirement = Requirement(text)
        version = pinned.get(requirement.name.lower().replace("_", "-"))
        if version is None or not requirement.specifier.contains(version, prereleases=True):
            wrong.append(f"{text}: the lock has {version or 'nothing'}")
    assert not wrong, "run scripts/lock-image-requirements: " + "; ".join(wrong)
