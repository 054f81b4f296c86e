"""A realistic platform for restore-planning tests: real Git remotes, real files, a real repository.

cloud > region-a > cluster-a (the training cluster), and region-b (where the DR repository and
the surviving Git host live). Planted on the failed cluster:
  - the Gitea that serves the platform's declarations (a remap to the surviving host exists);
  - the Gitea that serves `infra` (no remap: restoring it back there is refused);
  - optionally the age key that decrypts the `secrets` source (key_location in the cluster);
  - optionally (kubernetes tests) an image only in the cluster's own registry.
Independent: the `config` files and the surviving Git host.
Everything is driven through dr's real command line (dr.cli.main.main) or as a subprocess.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from dr.cli.main import main
from dr.repository.encryption import generate_identity
from dr.repository.repositories import Repository
from dr.repository.stores.local import LocalStore

DR = [sys.executable, "-m", "dr.cli.main"]
IN_CLUSTER_REGISTRY = "registry.cluster-a.internal:5000"
SURVIVING_REGISTRY = "ecr.region-b.example.com"


def git(*args: str, cwd: str | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True,
                          env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"}).stdout


def make_remote(path: Path, commits: list[str]) -> Path:
    """A bare repository with a main branch of `commits` and a tag."""
    git("init", "--quiet", "--bare", "--initial-branch=main", str(path))
    work = path.parent / (path.name + ".work")
    git("clone", "--quiet", str(path), str(work))
    for message in commits:
        (work / "README").write_text(message)
        git("add", "README", cwd=str(work))
        git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "--quiet", "-m", message,
            cwd=str(work))
    git("tag", "v1", cwd=str(work))
    git("push", "--quiet", "origin", "HEAD:refs/heads/main", "v1", cwd=str(work))
    return path


def refs(path: Path | str) -> dict[str, str]:
    out = git("for-each-ref", "--format=%(objectname) %(refname)", cwd=str(path))
    return {name: sha for sha, name in (line.split(" ", 1) for line in out.splitlines() if line)}


class World:
    """The platform's stand-ins under `root`, the plan that describes them, and its repository."""

    def __init__(self, root: Path):
        self.root = root
        self.gitea = root / "cluster-a" / "gitea"
        self.github = root / "github"
        self.repo_path = root / "repo"
        self.gitea.mkdir(parents=True)
        self.github.mkdir(parents=True)
        self.declarations = make_remote(self.gitea / "declarations.git", ["base", "apps"])
        self.infra = make_remote(self.gitea / "infra.git", ["terraform"])
        self.config = root / "data" / "config"
        self.config.mkdir(parents=True)
        (self.config / "values.yaml").write_text("replicas: 3\n")
        (self.config / "models").mkdir()
        (self.config / "models" / "llama.json").write_text('{"layers": 80}\n')
        identity, self.recipient = generate_identity()
        self.identity_file = root / "identity.txt"
        self.identity_file.write_text(identity + "\n")
        self.sources: list[dict[str, Any]] = [
            {"name": "declarations", "type": "git",
             "repositories": [{"name": "declarations", "url": str(self.declarations)}]},
            {"name": "infra", "type": "git", "repositories": [{"name": "infra", "url": str(self.infra)}]},
            {"name": "config", "type": "files", "paths": [str(self.config)]},
        ]
        self.remaps: list[dict[str, Any]] = [
            {"kind": "git-remote", "old": str(self.gitea / "declarations.git"),
             "new": str(self.github / "declarations.git"), "reason": "mirrored to the surviving Git host"}]
        self.rto: dict[str, Any] = {"detection": "10m", "cleanup": "15m", "requeue": "5m",
                                    "communication_rebuild": "3m", "steady_throughput": "20m"}
        self.key_location = "https://escrow.region-b.example.com/keys/dr"

    # -- the plan ------------------------------------------------------------------------------
    def plan_data(self) -> dict[str, Any]:
        return {
            "version": 1, "name": "ml-platform",
            "failure_domains": [{"name": "cloud", "kind": "provider", "children": [
                {"name": "region-a", "kind": "region", "children": [{"name": "cluster-a", "kind": "cluster"}]},
                {"name": "region-b", "kind": "region"}]}],
            "locations": [
                {"name": "gitea", "domain": "cluster-a", "kind": "git", "prefixes": [str(self.gitea) + "/"]},
                {"name": "github", "domain": "region-b", "kind": "git", "prefixes": [str(self.github) + "/"]},
                {"name": "ecr", "domain": "region-b", "kind": "registry", "hosts": [SURVIVING_REGISTRY]},
                {"name": "escrow", "domain": "region-b", "kind": "secret-store",
                 "hosts": ["escrow.region-b.example.com"]},
                {"name": "cluster-secrets", "domain": "cluster-a", "kind": "secret-store",
                 "prefixes": ["k8s://cluster-a/"]},
            ],
            "placement_rules": [{"match": "*.cluster-a.internal", "domain": "cluster-a",
                                 "reason": "the cluster's own DNS zone"}],
            "protects_against": ["cluster-a", "region-a"],
            "encryption": {"recipients": [self.recipient], "key_location": self.key_location},
            "targets": [{"name": "dr-site", "url": str(self.repo_path), "domain": "region-b"}],
            "restore": {"remaps": self.remaps, "rto": self.rto},
            "sources": self.sources,
        }

    def write_plan(self) -> str:
        path = self.root / "plan.yaml"
        path.write_text(yaml.safe_dump(self.plan_data(), sort_keys=False))
        return str(path)

    @property
    def plan(self) -> str:
        return self.write_plan()

    def repository(self) -> Repository:
        repo = Repository(LocalStore(str(self.repo_path)))
        repo.open()
        return repo

    def back_up_beside_config(self, source: dict[str, Any], files: dict[str, str]) -> Path:
        """Back up `config` and `source` only (no git source, so no git remap); `files` are
        written to data/<source name>, which the source's `folder` names. Returns the folder."""
        folder = self.root / "data" / source["name"]
        folder.mkdir(parents=True)
        for name, text in files.items():
            (folder / name).write_text(text)
        self.sources = [{"name": "config", "type": "files", "paths": [str(self.config)]},
                        {**source, "folder": str(folder)}]
        self.remaps = []
        self.backup()
        return folder

    def add_secret_files(self, source: str, file_name: str, text: str) -> Path:
        """A secret-class `files` source of one file, backed up; returns its folder."""
        folder = self.root / "data" / "secrets"
        folder.mkdir(parents=True)
        (folder / file_name).write_text(text)
        self.sources.append({"name": source, "type": "files", "paths": [str(folder)], "sensitivity": "secret"})
        self.backup()
        return folder

    # -- commands ------------------------------------------------------------------------------
    def dr(self, *args: str) -> int:
        return main(list(args))

    def backup(self) -> None:
        assert main(["backup", "--plan", self.plan, "-q"]) == 0

    def restore_args(self, *extra: str) -> list[str]:
        return ["restore", "--plan", self.plan, "--failed", "cluster-a", "--identity", str(self.identity_file),
                *extra]

    def journal_files(self) -> list[Path]:
        return sorted((self.repo_path / "journals").glob("*/*.json"))


def read_json_output(capsys) -> dict:
    import json

    return json.loads(capsys.readouterr().out)
