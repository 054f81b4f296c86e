"""Real chart sources for the helm exporter's tests, started once per session.

`http_repo`: charts made by the real `helm create`/`helm package`, indexed by `helm repo index`,
served over HTTP from a folder. `oci`: a CNCF distribution registry holding a chart pushed by
`helm push`; `dest`: an empty one restores push into (tests.harness.registries).
"""

from __future__ import annotations

import hashlib
import shutil
from dataclasses import dataclass
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
import yaml

from dr.backup import run_backup
from dr.contract.registry import GROUP, Registry
from dr.model.plan_loading import load_plan
from dr.repository.catalogs import read_catalog
from dr.repository.reading import ArtifactReader
from dr.repository.targets import open_target
from tests.harness.registries import DistributionRegistry
from tests.helm.charts import ChartServer, helm, provenance

REGISTRY = Registry([EntryPoint("helm", "dr.exporters.helm:HelmExporter", GROUP),
                     EntryPoint("kubernetes", "dr.exporters.kubernetes:KubernetesExporter", GROUP)])


@dataclass
class Charts:
    home: str  # helm's own folders
    http: ChartServer  # web 1.0.0 (with .prov), web 1.1.0, api 0.1.0
    packaged: Path  # the .tgz files as helm packaged them
    oci: DistributionRegistry  # charts/api:0.1.0, pushed by helm
    dest: DistributionRegistry

    def sha(self, filename: str) -> str:
        return "sha256:" + hashlib.sha256((self.packaged / filename).read_bytes()).hexdigest()

    @property
    def oci_api(self) -> str:
        return f"oci://{self.oci.host}/charts/api"


@pytest.fixture(scope="session")
def charts(tmp_path_factory):
    root = tmp_path_factory.mktemp("helm")
    home, packaged, served = str(root / "home"), root / "packaged", root / "served"
    for name in ("web", "api"):
        helm("create", name, home=home, cwd=str(root))
    helm("package", "web", "--version", "1.0.0", "-d", str(packaged), home=home, cwd=str(root))
    helm("package", "web", "--version", "1.1.0", "-d", str(packaged), home=home, cwd=str(root))
    helm("package", "api", "--version", "0.1.0", "-d", str(packaged), home=home, cwd=str(root))
    shutil.copytree(packaged, served)
    web = (served / "web-1.0.0.tgz").read_bytes()
    (served / "web-1.0.0.tgz.prov").write_bytes(provenance("web", "1.0.0", web))
    helm("repo", "index", str(served), home=home)
    started = []
    try:
        for name in ("helm-oci", "helm-dest"):
            started.append(DistributionRegistry(name=name).start())
        helm("push", str(packaged / "api-0.1.0.tgz"), f"oci://{started[0].host}/charts", "--plain-http", home=home)
        server = ChartServer(served)
        yield Charts(home, server, packaged, *started)
        server.stop()
    finally:
        for registry in started:
            registry.stop()


def plan_with(tmp_path, helm_options: dict, *, extra_sources=(), locations=(), recipients=(),
              remaps=()) -> object:
    data = {"encryption": {"recipients": list(recipients)}} if recipients else {}
    if remaps:
        data["restore"] = {"remaps": list(remaps)}
    data |= {"version": 1, "name": "helm-test",
            "failure_domains": [{"name": "cluster-a", "kind": "cluster"}, {"name": "dr-site", "kind": "site"}],
            "protects_against": ["cluster-a"], "locations": list(locations),
            "targets": [{"name": "dr", "url": str(tmp_path / "repo"), "domain": "dr-site"}],
            "sources": [*extra_sources, {"name": "charts", "type": "helm", **helm_options}]}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data, sort_keys=False))
    return load_plan(str(tmp_path / "plan.yaml"), REGISTRY)


def backup(plan):
    [result] = run_backup(plan, REGISTRY)
    repo = open_target(plan, plan.target("dr"))
    artifacts = [a for a in read_catalog(repo, result.snapshot.catalog)] if result.snapshot else []
    return result, {a.identity: a for a in artifacts if a.exporter == "helm"}, ArtifactReader(repo)


def source_result(result, name: str = "charts"):
    return next(s for s in result.sources if s.name == name)
