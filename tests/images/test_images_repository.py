"""Images kept in dr's own repository (`store: repository`), for sites with no second registry:
backed up from a real registry, deduplicated, reused when unchanged, judged by the audit,
pushed into a fresh registry by `dr restore --to`, and verified (a damaged or missing blob is
found and refused, naming the image)."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pytest
import yaml

from dr.audit import run_audit, scenarios_for
from dr.contract import ExportContext, NoDestination, OutcomeStatus, RestoreRequest
from dr.exporters.images import ImagesExporter
from dr.exporters.images.references import cosign_tags
from dr.model.artifacts import Artifact
from dr.model.plan_loading import load_plan
from dr.repository import layout, names
from dr.backup import run_backup
from dr.exporters.images.records import load
from dr.repository.checking import verify
from dr.repository.reading import ArtifactReader
from dr.repository.targets import open_target
from dr.drills.comparing import difference
from dr.restore import run_restore
from tests.harness.registries import push_image, tar_layer
from tests.images.conftest import REGISTRY, backup, source_result


@dataclass
class Held:
    plan: object
    result: object
    records: dict  # identity -> (artifact, record)
    reader: object
    refs: list[str]
    base: list[dict]  # the base layers api, worker and batch share

    @property
    def artifacts(self) -> list[Artifact]:
        repo = open_target(self.plan, self.plan.target("dr"))
        from dr.repository.catalogs import read_catalog
        return [a for a in read_catalog(repo, self.result.snapshot.catalog) if a.source == "images"]

    def exporter(self) -> ImagesExporter:
        return ImagesExporter(ExportContext("images", self.plan.options["images"], self.plan.base_dir))


def _plan(folder, registries, images: list[str]):
    """A plan whose images source keeps `images` in the repository only; the source registry is
    placed in the cluster the plan protects against, so the audit judges them."""
    (folder / "pods.json").write_text(json.dumps({"app": images[:1]}))
    data = {"version": 1, "name": "images-held",
            "failure_domains": [{"name": "cluster-a", "kind": "cluster"}, {"name": "dr-site", "kind": "site"}],
            "protects_against": ["cluster-a"],
            "locations": [{"name": "in-cluster-registry", "domain": "cluster-a",
                           "prefixes": [f"{registries.source.host}/"]}],
            "targets": [{"name": "dr", "url": str(folder / "repo"), "domain": "dr-site"}],
            "sources": [{"name": "pods", "type": "pods", "file": "pods.json"},
                        {"name": "images", "type": "images", "store": "repository", "images": images,
                         "retry_wait_seconds": 0.01}]}
    (folder / "plan.yaml").write_text(yaml.safe_dump(data))
    return load_plan(str(folder / "plan.yaml"), REGISTRY)


@pytest.fixture(scope="module")
def held(tmp_path_factory, registries, images) -> Held:
    client = registries.source.client()
    base = json.loads(client.get_manifest("team/api", images.api_digest).body)["layers"][:2]
    for layer in base:  # a third image on the same base layers
        client.mount_blob("team/batch", layer["digest"], "team/api")
    push_image(client, "team/batch", "1.0", [*base, tar_layer({"app/batch": os.urandom(40_000)})])
    refs = [images.api, images.worker, f"{registries.source.host}/team/batch:1.0", images.multi]
    plan = _plan(tmp_path_factory.mktemp("held"), registries, refs)
    result, records, reader = backup(plan)
    return Held(plan, result, records, reader, refs, base)


def test_images_go_into_the_repository_once_per_blob(held, registries, images):
    assert source_result(held.result).ok and not source_result(held.result).findings
    records = {k: r for k, (a, r) in held.records.items()}
    assert sorted(records) == sorted(held.refs)
    blobs = [a for a in held.artifacts if a.kind == "image-blob"]
    by_digest = {a.identity: a for a in blobs}
    assert len(by_digest) == len(blobs)  # one artifact per digest, whatever shares it
    every = {d: s for r in records.values() for t in r["repository"] for d, s in t["blobs"].items()}
    assert set(every) <= set(by_digest) and all(by_digest[d].size == s for d, s in every.items())
    # the shared base layers are in three images and stored once: the repository's blob of each
    # is the layer itself (one chunk: its name is its digest), and the bytes stored are the
    # distinct blobs', not the images' sum
    repo = open_target(held.plan, held.plan.target("dr"))
    stored = dict(repo.list_blobs())
    assert all(sum(layer["digest"] in r["blobs"] for r in records.values()) == 3 for layer in held.base)
    assert all(stored[layer["digest"].split(":")[1]] == layer["size"] for layer in held.base)
    per_image = sum(sum(r["blobs"].values()) for r in records.values())
    assert sum(stored.values()) < per_image - images.base_bytes  # two of the three base copies saved
    # nothing outside the repository: no registry to depend on, the audit calls them remapped
    api, record = held.records[images.api]
    assert api.dependencies == [] and record["copies"] == [] and "provides_at" not in api.meta
    assert [t["via"] for t in record["repository"]] == ["image", "cosign-tag"]
    assert record["repository"][1]["tags"] == [cosign_tags(images.api_digest)[0]]
    assert held.records[images.multi][1]["platforms"] == ["linux/amd64", "linux/arm64"]
    report = run_audit(held.plan, repo, held.plan.target("dr"), scenarios_for(held.plan, ["cluster-a"]))
    verdicts = {f.reference: f.code for f in report.findings if f.reference == images.api}
    assert verdicts == {images.api: "dependency-remapped"} and not report.blocked


def test_an_unchanged_second_backup_reads_no_blob(held):
    second, again, _ = backup(held.plan)
    stats = second.snapshot.stats
    mine = [a for a in _catalog(held.plan, second) if a.source == "images"]
    assert stats["artifacts_reused"] >= len(mine) == len(held.artifacts)
    assert stats["bytes_read"] < 1000  # only the pods file: every image artifact was reused unread
    assert {a.identity: a.chunks for a in mine} == {a.identity: a.chunks for a in held.artifacts}
    assert {k: r for k, (_, r) in again.items()} == {k: r for k, (_, r) in held.records.items()}


def _catalog(plan, result):
    from dr.repository.catalogs import read_catalog
    return list(read_catalog(open_target(plan, plan.target("dr")), result.snapshot.catalog))


def _restore(plan, **request):
    result = run_restore(plan, REGISTRY, "images", request=RestoreRequest(**request))
    return {o.item: o for o in result.outcomes}


def test_restore_pushes_from_the_repository_into_a_fresh_registry(held, registries, images):
    to = f"{registries.dest.url}/held"
    first = _restore(held.plan, to=to)
    assert sorted(first) == sorted(held.refs)  # one outcome per image, none per blob
    assert {o.status for o in first.values()} == {OutcomeStatus.RESTORED}, first
    dest, source = registries.dest.client(), registries.source.client()
    for ref in held.refs:
        path, tag = ref.split("/", 1)[1].rsplit(":", 1)
        assert dest.head_manifest(f"held/{path}", tag)[0] == source.head_manifest(path, tag)[0]
    multi = json.loads(dest.get_manifest("held/team/multi", "2.0").body)
    assert all(dest.head_manifest("held/team/multi", m["digest"]) for m in multi["manifests"])
    signature = cosign_tags(images.api_digest)[0]
    assert dest.head_manifest("held/team/api", signature)[0] == images.signature
    # the base layers crossed once: the later images found or mounted them
    pushed = {ref: int(o.reason.split(" bytes pushed")[0].rsplit(" ", 1)[1]) for ref, o in first.items()}
    sizes = {ref: sum(r["blobs"].values()) for ref, (_, r) in held.records.items() if ref in pushed}
    assert sum(pushed.values()) <= sum(sizes.values()) - 2 * images.base_bytes + 10_000

    assert {o.status for o in _restore(held.plan, to=to).values()} == {OutcomeStatus.UNCHANGED}
    other = push_image(dest, "held/team/worker", "1.0", [b"someone else's build"])
    conflict = _restore(held.plan, to=to)[images.worker]
    assert conflict.status == OutcomeStatus.CONFLICT and other in conflict.reason
    again = _restore(held.plan, to=to, overwrite=True)[images.worker]
    assert again.status == OutcomeStatus.RESTORED and " 0 bytes pushed" in again.reason  # every blob HEADed
    assert dest.head_manifest("held/team/worker", "1.0")[0] == source.head_manifest("team/worker", "1.0")[0]


def test_restored_content_compares_images_pushed_from_the_repository(held, registries, images):
    to = f"{registries.dest.url}/held-compared"
    exporter, artifacts = held.exporter(), held.artifacts
    by_identity = {a.identity: a for a in artifacts}

    def compared(to):
        return {c.item: difference(c, by_identity[c.item], held.reader)
                for c in exporter.restored_content(artifacts, held.reader, RestoreRequest(to=to))}
    assert {o.status for o in _restore(held.plan, to=to).values()} == {OutcomeStatus.RESTORED}
    assert compared(to) == {ref: "" for ref in held.refs}  # one item per image, none per blob
    assert compared(None) == {}  # held only in the repository: nothing in place to compare
    other = push_image(registries.dest.client(), "held-compared/team/batch", "1.0", [b"another build"])
    assert other[:10] in compared(to)[held.refs[2]]


def test_without_to_there_is_no_destination_and_the_rto_counts_image_bytes(held, images):
    exporter = held.exporter()
    with pytest.raises(NoDestination, match="--to images=REGISTRY"):
        exporter.destinations(held.artifacts, lambda kind, reference: None)
    outcomes = _restore(held.plan)
    assert {o.status for o in outcomes.values()} == {OutcomeStatus.FAILED}
    assert all("--to REGISTRY" in o.reason for o in outcomes.values())
    warmup = exporter.restore_bytes(held.artifacts)["image_warmup"]
    assert warmup == sum(sum(r["blobs"].values()) for a, r in held.records.values())


def test_verify_and_restore_refuse_a_damaged_or_missing_repository_blob(held, registries, images):
    exporter = held.exporter()
    artifacts = held.artifacts
    reports = {r.what: r for r in exporter.verify_copies(artifacts, held.reader, True)}
    assert all(r.ok for r in reports.values()) and len(reports) == len(held.refs)
    assert reports[f"image {images.api}"].data["blobs"] == len(held.records[images.api][1]["blobs"]) + 2

    # a record whose blob artifact is missing (a damaged catalog) is reported, naming the image
    _, record = held.records[images.api]
    own = max(set(record["blobs"]) - {layer["digest"] for layer in held.base}, key=record["blobs"].get)
    fewer = [a for a in artifacts if a.identity != own]
    report = {r.what: r for r in exporter.verify_copies(fewer, held.reader, False)}[f"image {images.api}"]
    assert not report.ok and own in report.problems[0] and "not in the snapshot" in report.problems[0]

    # damage the api's own layer in the repository's storage: same size, other bytes
    repo = open_target(held.plan, held.plan.target("dr"))
    path = os.path.join(repo.store.root, layout.blob_key(_chunk(artifacts, own)))
    os.chmod(path, 0o644)
    with open(path, "rb") as handle:
        original = handle.read()
    with open(path, "wb") as handle:
        handle.write(bytes([original[0] ^ 0xFF]) + original[1:])
    try:
        checks = {r.what: r for r in exporter.verify_copies(artifacts, held.reader, True)}
        assert not checks[f"image {images.api}"].ok and own in checks[f"image {images.api}"].problems[0]
        assert checks[f"image {images.worker}"].ok  # the damage is the api's alone
        assert not verify(repo, read_data=True).ok  # dr verify's own pass finds it too
        failed = _restore(held.plan, to=f"{registries.dest.url}/from-damaged")
        assert failed[images.api].status == OutcomeStatus.FAILED and "dr's repository" in failed[images.api].reason
        assert failed[images.worker].status == OutcomeStatus.RESTORED
        assert registries.dest.client().head_manifest("from-damaged/team/api", "1.0") is None  # no tag on a hole
    finally:
        with open(path, "wb") as handle:
            handle.write(original)


def _chunk(artifacts: list[Artifact], identity: str) -> str:
    [artifact] = [a for a in artifacts if a.identity == identity]
    [chunk] = artifact.chunks
    return chunk


def test_a_source_serving_corrupt_bytes_is_refused_and_the_other_images_still_go_in(tmp_path, registries, images,
                                                                                     proxy):
    api, worker = (ref.replace(registries.source.host, proxy.host) for ref in (images.api, images.worker))
    layers = json.loads(registries.source.client().get_manifest("team/api", images.api_digest).body)["layers"]
    own = layers[-1]["digest"]  # the api's own layer, not the base it shares with the worker
    proxy.corrupt = {own}
    plan = _plan(tmp_path, registries, [api, worker])
    result, records, _ = backup(plan)
    [finding] = source_result(result).findings
    assert finding["code"] == "image-store-failed" and api in finding["message"] and own in finding["message"]
    assert list(records) == [worker]
    catalog = [a.identity for a in _catalog(plan, result) if a.kind == "image-blob"]
    assert own not in catalog and set(records[worker][1]["blobs"]) <= set(catalog)


def test_both_keeps_the_repository_copy_when_the_dr_registry_is_down(tmp_path, registries, images):
    from tests.servers import free_port
    down = f"http://127.0.0.1:{free_port()}"
    plan = _plan(tmp_path, registries, [images.worker])
    plan = load_plan(_with(tmp_path, store="both", to=[down], retries=0), REGISTRY)
    result, records, _ = backup(plan)
    assert [f["code"] for f in source_result(result).findings] == ["dr-registry-unreachable"]
    artifact, record = records[images.worker]
    assert record["copies"] == [] and record["repository"][0]["digest"] == record["digest"]
    assert artifact.meta["stored"] == "repository"


def _with(folder, **options) -> str:
    path = folder / "plan.yaml"
    data = yaml.safe_load(path.read_text())
    data["sources"][1].update(options)
    path.write_text(yaml.safe_dump(data))
    return str(path)


def test_a_secret_source_keeps_its_images_encrypted(tmp_path, registries, images):
    import pyrage
    identity = pyrage.x25519.Identity.generate()
    _plan(tmp_path, registries, [images.worker])
    data = yaml.safe_load((tmp_path / "plan.yaml").read_text())
    data["encryption"] = {"recipients": [str(identity.to_public())]}
    data["sources"][1]["sensitivity"] = "secret"
    (tmp_path / "plan.yaml").write_text(yaml.safe_dump(data))
    plan = load_plan(str(tmp_path / "plan.yaml"), REGISTRY)
    [result] = run_backup(plan, REGISTRY)
    catalog = names.open_all(_catalog(plan, result), [identity])  # as dr restore reads it (format.md 8.1)
    blobs = [a for a in catalog if a.kind == "image-blob"]
    assert blobs and all(a.encrypted for a in blobs)
    repo = open_target(plan, plan.target("dr"))
    [artifact] = [a for a in catalog if a.kind == "image"]
    record = load(ArtifactReader(repo, [identity]).read(artifact))
    assert set(record["blobs"]) <= {a.identity for a in blobs}
    stored = dict(repo.list_blobs())
    assert not set(stored) & {d.split(":")[1] for d in record["blobs"]}  # no layer stored in plaintext
    outcome = run_restore(plan, REGISTRY, "images", identities=[identity],
                          request=RestoreRequest(to=f"{registries.dest.url}/secret")).outcomes
    assert [o.status for o in outcome] == [OutcomeStatus.RESTORED]
    assert registries.dest.client().head_manifest("secret/team/worker", "1.0")[0] == record["digest"]
    exporter = ImagesExporter(ExportContext("images", plan.options["images"], plan.base_dir))
    mine = [a for a in catalog if a.source == "images"]
    [report] = exporter.verify_copies(mine, ArtifactReader(repo, [identity]), True)
    assert report.ok and report.data["blobs"] == len(record["blobs"]) and report.data["undecrypted"] == 0
    # without the identity nothing can be read, the names neither: said, not reported as damage
    sealed = [a for a in _catalog(plan, result) if a.source == "images"]
    [report] = exporter.verify_copies(sealed, ArtifactReader(repo), True)
    assert report.ok and report.data["undecrypted"] == 1 and "no identity" in report.where
