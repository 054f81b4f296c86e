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
import shutil
import subprocess
import tempfile
import tomllib
from pathlib import Path

import pytest

from tests.cli.planfiles import files_source, key_pair, local_target, write_plan
from tests.harness.image_install import IMAGE_UID, ROOT, as_image_user, build_context_files

pytestmark = pytest.mark.slow


def test_the_build_context_holds_the_package_and_nothing_else():
    files = build_context_files(ROOT)
    assert {"pyproject.toml", "requirements.lock", "dr/cli/main.py"} <= set(files)
    assert not [f for f in files if f.startswith(("tests/", ".venv/", "bench/", ".git/")) or "__pycache__" in f]


@pytest.fixture(scope="module")
def image_like(image_install):
    return image_install


def _as_image_user(venv: Path, argv: list[str], work: Path) -> subprocess.CompletedProcess:
    env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "HOME": "/nonexistent", "TMPDIR": str(work),
           "PYTHONDONTWRITEBYTECODE": "1", "LANG": "C.UTF-8"}
    return subprocess.run(as_image_user() + [str(venv / "bin" / "dr"), *argv], capture_output=True, text=True,
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
