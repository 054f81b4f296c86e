"""Real registries for the images exporter's tests, started once per session.

`source`: where the platform's images are (plain); `dr`: a DR registry (plain); `dr_auth`: a
DR registry with htpasswd basic auth; `dest`: a new registry restores push into. Images are
built once (tests.harness.registries). `proxy` puts a fault/bearer proxy in front of the
source for one test.
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import dataclass
from importlib.metadata import EntryPoint

import pytest
import yaml

from dr.backup import run_backup
from dr.exporters.images.records import load
from dr.contract.registry import GROUP, Registry
from dr.model.plan_loading import load_plan
from dr.repository.catalogs import read_catalog
from dr.repository.reading import ArtifactReader
from dr.repository.targets import open_target
from tests.harness.registries import (DistributionRegistry, RegistryProxy, push_image, push_index,
                                      push_signature, tar_layer)

REGISTRY = Registry([EntryPoint("images", "dr.exporters.images:ImagesExporter", GROUP),
                     EntryPoint("pods", "tests.plugins.acme_pods:PodsExporter", GROUP)])
USER, PASSWORD = "dr-backup", "s3cret-pw"


@dataclass
class Registries:
    source: DistributionRegistry
    dr: DistributionRegistry
    dr_auth: DistributionRegistry
    dest: DistributionRegistry


@pytest.fixture(scope="session")
def registries():
    started = []
    try:
        for users, name in ((None, "source"), (None, "dr"), ({USER: PASSWORD}, "dr-auth"), (None, "dest")):
            started.append(DistributionRegistry(users, name=name).start())
        yield Registries(*started)
    finally:
        for server in started:
            server.stop()


@dataclass
class Images:
    api: str  # references as pods name them
    worker: str
    multi: str
    api_digest: str
    signature: str
    base_bytes: int  # the shared base layers' size


@pytest.fixture(scope="session")
def images(registries) -> Images:
    client = registries.source.client()
    base = [tar_layer({"bin/base": os.urandom(300_000)}), tar_layer({"lib/base": os.urandom(100_000)})]
    api = push_image(client, "team/api", "1.0", [*base, tar_layer({"app/api": os.urandom(50_000)})])
    push_image(client, "team/worker", "1.0", [*base, tar_layer({"app/worker": os.urandom(50_000)})])
    push_index(client, "team/multi", "2.0", {("linux", "amd64"): [tar_layer({"x": os.urandom(20_000)})],
                                             ("linux", "arm64"): [tar_layer({"y": os.urandom(20_000)})]})
    signature = push_signature(client, "team/api", api)
    host = registries.source.host
    return Images(f"{host}/team/api:1.0", f"{host}/team/worker:1.0", f"{host}/team/multi:2.0", api, signature,
                  sum(len(b) for b in base))


@pytest.fixture
def proxy(registries):
    proxy = RegistryProxy(registries.source.host)
    yield proxy
    proxy.close()


def auth_file(folder, registries, password: str = PASSWORD) -> str:
    token = base64.b64encode(f"{USER}:{password}".encode()).decode()
    path = os.path.join(folder, "auth.json")
    with open(path, "w") as handle:
        json.dump({"auths": {registries.dr_auth.host: {"auth": token}}}, handle)
    return "auth.json"


def plan_with(tmp_path, options: dict, pods: dict | None = None, name: str = "images"):
    (tmp_path / "pods.json").write_text(json.dumps(pods or {}))
    data = {"version": 1, "name": "images-test",
            "failure_domains": [{"name": "cluster-a", "kind": "cluster"}, {"name": "dr-site", "kind": "site"}],
            "protects_against": ["cluster-a"],
            "targets": [{"name": "dr", "url": str(tmp_path / "repo"), "domain": "dr-site"}],
            "sources": [{"name": "pods", "type": "pods", "file": "pods.json"},
                        {"name": name, "type": "images", "retry_wait_seconds": 0.01, **options}]}
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data))
    return load_plan(str(tmp_path / "plan.yaml"), REGISTRY)


def backup(plan, sources=None):
    [result] = run_backup(plan, REGISTRY, sources)
    repo = open_target(plan, plan.target("dr"))
    # the images' records (with `store: repository`, their blobs are `image-blob` artifacts beside them)
    artifacts = [a for a in read_catalog(repo, result.snapshot.catalog) if a.exporter == "images" and a.kind == "image"]
    reader = ArtifactReader(repo)
    return result, {a.identity: (a, load(reader.read(a))) for a in artifacts}, reader


def source_result(result, name: str = "images"):
    return next(s for s in result.sources if s.name == name)
