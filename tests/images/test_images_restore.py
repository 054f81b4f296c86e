"""Restoring images into a new registry from the DR copies, and verifying the copies by digest."""

from __future__ import annotations

import os

import pytest
import requests

from dr.contract import ExportContext, OutcomeStatus, RestoreRequest
from dr.drills.comparing import difference
from dr.exporters.images import ImagesExporter
from dr.restore import run_restore
from tests.harness.registries import push_image
from tests.images.conftest import REGISTRY, backup, plan_with


@pytest.fixture
def backed_up(tmp_path, registries, images):
    plan = plan_with(tmp_path, {"to": [f"{registries.dr.url}/restore"], "images": [images.multi]},
                     pods={"api": [images.api], "worker": [images.worker]})
    result, records, reader = backup(plan)
    return plan, records, reader


def _restore(plan, **request):
    result = run_restore(plan, REGISTRY, "images", request=RestoreRequest(**request))
    return {o.item: o for o in result.outcomes}


def test_restore_to_a_new_registry_then_unchanged_conflict_and_overwrite(backed_up, registries, images):
    plan, records, _ = backed_up
    to = f"{registries.dest.url}/recovered"
    planned = _restore(plan, to=to, dry_run=True)
    assert {o.status for o in planned.values()} == {OutcomeStatus.PLANNED}
    assert registries.dest.client().catalog() == [] or not any(
        r.startswith("recovered/") for r in registries.dest.client().catalog())

    first = _restore(plan, to=to)
    assert {o.status for o in first.values()} == {OutcomeStatus.RESTORED}, first
    dest = registries.dest.client()
    assert dest.head_manifest("recovered/team/api", "1.0")[0] == images.api_digest
    assert dest.head_manifest("recovered/team/multi", "2.0")[0] == records[images.multi][1]["digest"]
    # the signature travelled with the image
    assert images.api_digest.replace(":", "-") + ".sig" in dest.tags("recovered/team/api")

    assert {o.status for o in _restore(plan, to=to).values()} == {OutcomeStatus.UNCHANGED}
    other = push_image(dest, "recovered/team/api", "1.0", [b"someone else's build"])
    conflict = _restore(plan, to=to)
    assert conflict[images.api].status == OutcomeStatus.CONFLICT and other in conflict[images.api].reason
    assert dest.head_manifest("recovered/team/api", "1.0")[0] == other
    assert _restore(plan, to=to, overwrite=True)[images.api].status == OutcomeStatus.RESTORED
    assert dest.head_manifest("recovered/team/api", "1.0")[0] == images.api_digest


def test_without_to_the_copies_are_checked_in_place(backed_up):
    plan, records, _ = backed_up
    outcomes = _restore(plan)
    assert {o.status for o in outcomes.values()} == {OutcomeStatus.UNCHANGED}
    assert all("DR copy" in o.reason for o in outcomes.values())


def test_verify_checks_every_manifest_and_blob_and_finds_a_corrupt_blob(backed_up, registries, images):
    plan, records, reader = backed_up
    exporter = ImagesExporter(ExportContext("images", plan.options["images"], plan.base_dir))
    artifacts = [a for a, _ in records.values()]
    checks = exporter.verify(artifacts, reader)
    assert all(c.ok for c in checks), [c.problems for c in checks]
    assert sum(c.blobs for c in checks) == sum(len(r["blobs"]) for _, r in records.values())

    # damage one layer of the api copy in the DR registry's storage
    _, record = records[images.api]
    layer = max(record["blobs"], key=record["blobs"].get)
    data = registries.dr.root / "data" / "docker/registry/v2/blobs/sha256" / layer[7:9] / layer[7:] / "data"
    os.chmod(data, 0o644)
    original = data.read_bytes()
    data.write_bytes(b"x" + original[1:])
    try:
        _check_damage(exporter, artifacts, reader, plan, registries, images, layer)
    finally:  # the registry's blob store is shared by every test of the session
        data.write_bytes(original)


def _check_damage(exporter, artifacts, reader, plan, registries, images, layer):
    checks = {c.item: c for c in exporter.verify(artifacts, reader)}
    assert not checks[images.api].ok and layer in checks[images.api].problems[0]
    assert checks[images.multi].ok
    # the contract v2 method dr verify calls reports the same copy, naming the layer
    reports = {r.what: r for r in exporter.verify_copies(artifacts, reader, True)}
    assert not reports[f"image {images.api}"].ok and layer in reports[f"image {images.api}"].problems[0]
    quick = {c.item: c for c in exporter.verify(artifacts, reader, read_data=False)}
    assert quick[images.api].ok  # HEAD sees the size only: --read-data is what finds corruption
    # a restore refuses the corrupt copy too, naming the layer
    failed = _restore(plan, to=f"{registries.dest.url}/from-corrupt")
    assert failed[images.api].status == OutcomeStatus.FAILED and layer in failed[images.api].reason
    assert failed[images.worker].status == OutcomeStatus.RESTORED or layer in failed[images.worker].reason


def _compared(plan, records, reader, to: str | None) -> dict:
    """What dr drill finds of each image: "" or what differs from the backup."""
    exporter = ImagesExporter(ExportContext("images", plan.options["images"], plan.base_dir))
    artifacts = {a.identity: a for a, _ in records.values()}
    return {c.item: difference(c, artifacts[c.item], reader)
            for c in exporter.restored_content(list(artifacts.values()), reader, RestoreRequest(to=to))}


def test_restored_content_hashes_each_pushed_image_and_finds_its_tree(backed_up, registries, images):
    plan, records, reader = backed_up
    to = f"{registries.dest.url}/compared"
    assert set(_compared(plan, records, reader, to).values()) == {"nothing of it is at the destination"}
    assert {o.status for o in _restore(plan, to=to).values()} == {OutcomeStatus.RESTORED}
    assert _compared(plan, records, reader, to) == {images.api: "", images.worker: "", images.multi: ""}
    assert _compared(plan, records, reader, None) == {images.api: "", images.worker: "", images.multi: ""}

    dest = registries.dest.client()
    other = push_image(dest, "compared/team/api", "1.0", [b"someone else's build"])  # the tag moved
    compared = _compared(plan, records, reader, to)
    assert other[:10] in compared[images.api] and compared[images.worker] == "" == compared[images.multi]
    # a layer of the worker image lost from the destination: its digest is right, its tree is not whole
    _, record = records[images.worker]
    layer = max(record["blobs"], key=record["blobs"].get)
    response = requests.delete(f"{registries.dest.url}/v2/compared/team/worker/blobs/{layer}", timeout=10)
    assert response.status_code == 202, response.text
    assert "fingerprint 1 missing" in _compared(plan, records, reader, to)[images.worker]
    # the api image's signature lost from the destination: what travels with it is compared too
    assert {o.status for o in _restore(plan, to=to, overwrite=True).values()} <= {
        OutcomeStatus.RESTORED, OutcomeStatus.UNCHANGED}
    assert _compared(plan, records, reader, to)[images.api] == ""
    response = requests.delete(f"{registries.dest.url}/v2/compared/team/api/manifests/{images.signature}", timeout=10)
    assert response.status_code == 202, response.text
    assert "fingerprint 1 missing" in _compared(plan, records, reader, to)[images.api]


def test_a_drill_compares_every_image_with_the_backup(backed_up, tmp_path):
    """dr drill: the images step checks its DR copies in place and compares each with the backup."""
    from dr.drills.drilling import run_drill
    plan, records, _ = backed_up
    record = run_drill(plan, REGISTRY, failed=["cluster-a"], scratch=str(tmp_path / "scratch"))
    check = next(c for c in record["verify"]["steps"] if c["step"].startswith("images"))
    assert check["verified"] and check["compared"] == len(records), check
    assert check["reason"].startswith(f"all {len(records)} items identical to the backup"), check["reason"]
